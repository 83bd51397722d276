//! What the meeting tests share: where a meeting's files are, and what `meeting show --json`
//! says of it.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::Project;

/// `meeting show <id> --json`.
pub(crate) fn show(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["meeting", "show", id, "--json"])).expect("show json")
}

/// The meeting's artifact, `.lore/meetings/<id>.md`.
pub(crate) fn meeting_path(p: &Project, id: &str) -> PathBuf {
    p.root.join(".lore/meetings").join(format!("{id}.md"))
}

/// `$GUILD_HALL_HOME/<sub>/<project>`: there is one project.
pub(crate) fn project_dir(p: &Project, sub: &str) -> PathBuf {
    let dir = p.home.join(sub);
    let project = std::fs::read_dir(&dir).ok().and_then(|mut d| d.next()).map(|e| e.expect("entry").path());
    project.unwrap_or(dir)
}
