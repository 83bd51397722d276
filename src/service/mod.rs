//! Front ends that run beside the loop: the `watch` service, the dispatcher operations
//! (`ops`), the meeting and plan catalogues carried out (`kinds`), and their faces — the
//! JSON-RPC endpoint (`worker/*`, `meeting/*`, `plan/*`) and the manager MCP server.

pub mod gc;
pub mod kinds;
pub mod manager;
pub mod ops;
pub mod rpc;
pub mod watch;
