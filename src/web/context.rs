//! What every request is served from ([`Server`]: the home, the projects, the change stream,
//! the guard), which project a request means, and what a live page's stream does ([`Live`]):
//! shared by the router and the pages, so that neither imports the other.

use anyhow::{anyhow, Result};

use crate::config::{Home, Project};

use super::auth::Guard;
use super::html;
use super::http::{Request, Response};
use super::hub::{Batch, Hub};

/// What every request is served from.
pub(crate) struct Server {
    pub(crate) home: Home,
    pub(crate) projects: Vec<Project>,
    pub(crate) hub: std::sync::Arc<Hub>,
    pub(crate) guard: Guard,
}

impl Server {
    /// The project a request names (`?project=NAME`), else the one holding commission `id`,
    /// else the only one served.
    pub(crate) fn project_of(&self, req: &Request, commission: Option<&str>) -> Result<&Project> {
        if let Some(name) = req.param("project") {
            return self.projects.iter().find(|p| p.name == name).ok_or_else(|| anyhow!("no project {name:?} is served here"));
        }
        if let [only] = self.projects.as_slice() {
            return Ok(only);
        }
        if let Some(id) = commission {
            if let Some(p) = self.projects.iter().find(|p| p.commission_path(id).exists()) {
                return Ok(p);
            }
        }
        Err(anyhow!("several projects are served: say which with ?project=NAME"))
    }
}

/// A page saying what is not there (404).
pub(crate) fn not_found(e: &anyhow::Error) -> Response {
    let mut r = Response::html(html::page("Not found", &format!("<h1>Not found</h1><p>{}</p>", html::line(&format!("{e:#}"))), &[]));
    r.status = 404;
    r
}

/// A page's live side: what its event stream sends after changes.
pub(crate) trait Live {
    /// What to send after `batch`; `None`: the page may have missed changes (it was rendered
    /// before its stream began), everything it shows is sent again.
    fn after(
        &mut self,
        server: &Server,
        batch: Option<&Batch>,
        send: &mut dyn FnMut(&str, &str) -> std::io::Result<()>,
    ) -> std::io::Result<()>;
}
