//! What the plan tests share: a plan written from its waves, and what `plan show --json` says
//! of it and of one of its tasks.

use serde_json::Value;

use crate::common::Project;

/// `.lore/plans/<id>.md` with a title and these `waves:` lines.
pub(crate) fn write_plan(p: &Project, id: &str, waves: &str) {
    let dir = p.root.join(".lore/plans");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{id}.md")), format!("---\ntitle: {id}\nwaves:\n{waves}---\n")).expect("write plan");
}

/// `plan show <id> --json`.
pub(crate) fn show(p: &Project, id: &str) -> Value {
    serde_json::from_str(&p.ok(&["plan", "show", id, "--json"])).expect("plan json")
}

/// The task labelled `label` of a `plan show --json`.
pub(crate) fn task<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["tasks"].as_array().expect("tasks").iter().find(|t| t["label"] == label).expect("the task")
}
