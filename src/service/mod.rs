//! Front ends that run beside the loop: the `watch` service, the JSON-RPC endpoint (`worker/*`,
//! `meeting/*`, `plan/*`) and the manager MCP server — faces over [`crate::ops`].

pub mod manager;
pub mod rpc;
pub mod watch;
