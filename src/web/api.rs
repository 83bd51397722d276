//! `POST /api/<catalogue>/<operation>`: the operations of the catalogues every face uses —
//! `commission` (the dispatcher's: approve, revise, reject, answer, cancel, diff, status, …),
//! `meeting` and `plan` — called with the request's JSON body as their arguments, over the
//! project `?project=NAME` names (the only one served if none). Only glue: the operation
//! decides; its reply is the JSON answer, its error a status by its kind.

use serde_json::{json, Value as Json};

use crate::config::Project;
use crate::ops::catalogue::Plans;
use crate::ops::dispatcher::Dispatcher;
use crate::tools::{ErrorKind, Tool, ToolError};

use super::context::Server;
use super::http::Response;

/// Call `operation` of `catalogue` with `body` as its arguments.
pub(crate) fn call(server: &Server, project: &Project, catalogue: &str, operation: &str, body: &[u8]) -> Response {
    let args: Json = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(body) {
            Ok(a) => a,
            Err(e) => return Response::json(400, &json!({"error": format!("the body is not JSON: {e}"), "kind": "refused"})),
        }
    };
    let home = server.home.clone();
    let project = project.clone();
    let replied = match catalogue {
        "commission" => run(&crate::tools::dispatcher::tools(), operation, &Dispatcher { home, project }, args),
        // A turn's events go to the meeting's pages as they come.
        "meeting" => super::meeting::call(server, &project, operation, args),
        "plan" => run(&crate::tools::plan::tools(), operation, &Plans { home, project }, args),
        _ => None,
    };
    match replied {
        None => Response::json(404, &json!({"error": format!("no operation {catalogue}/{operation}"), "kind": "not_found"})),
        Some(Ok((reply, text))) => Response::json(200, &json!({"reply": reply, "text": text})),
        Some(Err(e)) => {
            let (status, kind) = match e.kind() {
                ErrorKind::Refused => (409, "refused"),
                ErrorKind::NotFound => (404, "not_found"),
                ErrorKind::Conflict => (409, "conflict"),
                ErrorKind::Fault => (500, "fault"),
            };
            if status == 500 {
                tracing::error!(catalogue, operation, error = %format!("{e:#}"), "web: operation failed");
            }
            Response::json(status, &json!({"error": format!("{e:#}"), "kind": kind}))
        }
    }
}

fn run<C: 'static>(tools: &[Tool<C>], name: &str, ctx: &C, args: Json) -> Option<Result<(Json, String), ToolError>> {
    crate::tools::find(tools, name).map(|t| t.call(ctx, args))
}
