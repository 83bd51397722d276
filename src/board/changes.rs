//! Which items a batch of file events touches, from the paths alone: one commission (its
//! artifact, timeline or runtime dir), a project's plans or meetings, or everything (a worker
//! package, settings, anything not known). The board reads again only that. Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::config::{Home, Project};

/// What to read again.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Everything, every project.
    pub(crate) all: bool,
    /// Commissions by project index: their ids.
    pub(crate) commissions: BTreeMap<usize, BTreeSet<String>>,
    pub(crate) plans: BTreeSet<usize>,
    pub(crate) meetings: BTreeSet<usize>,
    /// Only the detail pane (a branch moved, a log grew).
    pub(crate) detail: bool,
}

impl Changes {
    pub(crate) fn is_empty(&self) -> bool {
        !self.all && self.commissions.is_empty() && self.plans.is_empty() && self.meetings.is_empty()
    }

    pub(crate) fn merge(&mut self, other: Changes) {
        self.all |= other.all;
        for (p, ids) in other.commissions {
            self.commissions.entry(p).or_default().extend(ids);
        }
        self.plans.extend(other.plans);
        self.meetings.extend(other.meetings);
        self.detail |= other.detail;
    }
}

/// The first component of `path` under `dir`, if it is under it.
fn under<'a>(path: &'a Path, dir: &Path) -> Option<&'a str> {
    path.strip_prefix(dir).ok()?.components().next()?.as_os_str().to_str()
}

/// A commission's id from a file name in `.lore/commissions/`: `<id>.md`, `<id>.timeline.jsonl`.
fn artifact_id(name: &str) -> Option<&str> {
    name.strip_suffix(".timeline.jsonl").or_else(|| name.strip_suffix(".md")).filter(|id| !id.starts_with('.'))
}

/// What the changed `paths` touch.
pub(crate) fn classify(home: &Home, projects: &[Project], paths: &[std::path::PathBuf]) -> Changes {
    let mut c = Changes::default();
    for path in paths {
        c.merge(one(home, projects, path));
    }
    c
}

fn one(home: &Home, projects: &[Project], path: &Path) -> Changes {
    let mut c = Changes::default();
    for (i, p) in projects.iter().enumerate() {
        if let Some(name) = under(path, &p.commissions_dir()) {
            match artifact_id(name) {
                Some(id) => {
                    c.commissions.entry(i).or_default().insert(id.to_string());
                }
                // A temp file of an atomic write, an editor's: its rename is the event.
                None if name.starts_with('.') || name.ends_with('~') => {}
                None => c.all = true,
            }
            return c;
        }
        if let Some(id) = under(path, &home.commissions_state(&p.name)) {
            c.commissions.entry(i).or_default().insert(id.to_string());
            c.detail = true;
            return c;
        }
        if path.starts_with(p.plans_dir()) || path.starts_with(home.plans_state(&p.name)) {
            c.plans.insert(i);
            c.detail = true;
            return c;
        }
        if path.starts_with(p.meetings_dir())
            || path.starts_with(home.meetings_state(&p.name))
            || path.starts_with(home.transcripts_dir(&p.name))
        {
            c.meetings.insert(i);
            c.detail = true;
            return c;
        }
        if path.starts_with(home.project_state(&p.name)) {
            // The project's lock, its other runtime files: who reconciles is looked at anyway.
            return c;
        }
    }
    // Git (a branch moved): the detail pane's distance; the list is read from the files.
    if path.components().any(|s| s.as_os_str() == ".git") {
        c.detail = true;
        return c;
    }
    if path.starts_with(home.state_root()) {
        return c;
    }
    c.all = true;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn setup() -> (Home, Vec<Project>) {
        let home = Home { root: PathBuf::from("/h") };
        let project = Project { root: PathBuf::from("/r"), name: "r-1".into(), config: Default::default() };
        (home, vec![project])
    }

    #[test]
    fn a_path_names_what_to_read_again() {
        let (home, projects) = setup();
        let c = |p: &str| one(&home, &projects, Path::new(p));
        let ids = |c: Changes| c.commissions.get(&0).cloned().unwrap_or_default().into_iter().collect::<Vec<_>>();
        assert_eq!(ids(c("/r/.lore/commissions/nap.md")), ["nap"]);
        assert_eq!(ids(c("/r/.lore/commissions/v1.2.timeline.jsonl")), ["v1.2"]);
        assert_eq!(ids(c("/h/state/r-1/commissions/nap/attempt-1.log")), ["nap"]);
        assert!(c("/r/.lore/commissions/.nap.md.guild-hall-x.tmp").is_empty());
        assert_eq!(c("/r/.lore/plans/port.md").plans, BTreeSet::from([0]));
        assert_eq!(c("/h/state/r-1/plans/port/record.json").plans, BTreeSet::from([0]));
        assert_eq!(c("/r/.lore/meetings/ask.md").meetings, BTreeSet::from([0]));
        assert_eq!(c("/h/meetings/r-1/ask.md").meetings, BTreeSet::from([0]));
        assert!(c("/h/state/r-1/lock").is_empty());
        let git = c("/r/.git/refs/heads/claude/main");
        assert!(git.is_empty() && git.detail);
        assert!(c("/r/.lore/workers/scribe/worker.yaml").all);
        assert!(c("/r/.lore/guild-hall.yaml").all);
        assert!(c("/h/workers/x/worker.yaml").all);
    }
}
