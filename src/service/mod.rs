//! Front ends that run beside the loop: the `watch` service, the dispatcher operations
//! (`ops`) and their faces — the `worker/*` JSON-RPC endpoint and the manager MCP server.

pub mod gc;
pub mod manager;
pub mod ops;
pub mod kinds;
pub mod rpc;
pub mod watch;
