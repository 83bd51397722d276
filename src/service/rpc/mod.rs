//! The JSON-RPC 2.0 endpoint of `guild-hall watch --socket/--listen`: HTTP `POST /mcp`, one
//! request per body, on a Unix socket (mode 0600) and/or a loopback TCP port. In three parts:
//! [`transport`] (a deliberately small HTTP/1.1 reader with hard limits, the connection cap,
//! deadlines, whole replies and chunked streams), [`auth`] (who may be served: the bearer
//! token, the Unix peer's process) and [`routes`] (each method to its catalogue entry).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::Home;

pub(crate) mod auth;
pub(crate) mod routes;
pub(crate) mod transport;

/// What the endpoint serves: the home and the projects it may dispatch into.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) home: Home,
    pub(crate) projects: Vec<PathBuf>,
    /// Required as `Authorization: Bearer <token>` (TCP only; the socket's mode guards it).
    pub(crate) token: Option<String>,
    pub(crate) limits: Limits,
}

/// How much the endpoint takes on at once, and how long a client has to send its request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; one more is answered `503` at once and closed.
    pub max_connections: usize,
    /// The whole request (request line, headers and body) must arrive within this; the reply
    /// (a streamed turn may run for many minutes) is not bounded by it.
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: 64, request_timeout: Duration::from_secs(10) }
    }
}
