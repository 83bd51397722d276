//! Front ends that run beside the loop: the `watch` service, the `worker/*` JSON-RPC endpoint
//! and the manager MCP server — faces over [`crate::ops`].

pub mod manager;
pub mod rpc;
pub mod watch;
