//! The board's commands carried out: each through the operation the CLI's command calls
//! (`ops::commission::ask`, `redispatch`, `ops::plan::request`, `ops::meeting::decline`,
//! `ops::commission::create`), or by running the CLI itself with the terminal handed over
//! (`meeting accept` and `meeting chat`, `logs` into `$PAGER`, `$EDITOR` on the file).

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitStatus};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::artifact::plan::PlanStatus;
use crate::artifact::{Desired, MeetingStatus};
use crate::config::{Home, Project};

use super::keys::Command;
use super::model::{Item, Kind};

/// What a command needs: where it acts, and how to run a program in the terminal (the board
/// steps aside while it runs, and comes back after).
pub(crate) struct Ctx<'a> {
    pub home: &'a Home,
    pub project: &'a Project,
    /// This binary, for the CLI commands it runs.
    pub(crate) exe: &'a Path,
    pub(crate) run: &'a mut dyn FnMut(&mut Process) -> std::io::Result<ExitStatus>,
    /// The comment a revision is sent back with (typed after `v`).
    pub(crate) comment: &'a str,
    /// What the person typed for the command (an answer).
    pub(crate) typed: &'a str,
}

impl Ctx<'_> {
    /// `guild-hall -C <project> --home <home> ARGS…`.
    fn cli(&self, args: &[&str]) -> Process {
        let mut p = Process::new(self.exe);
        p.arg("-C").arg(&self.project.root).arg("--home").arg(&self.home.root).args(args);
        p
    }

    /// Run a shell line in the terminal, with `$1`, `$2`, … set to `args`.
    fn shell(&mut self, line: &str, args: &[&std::ffi::OsStr]) -> Result<ExitStatus> {
        let mut p = Process::new("sh");
        p.arg("-c").arg(line).arg("sh").args(args).current_dir(&self.project.root);
        (self.run)(&mut p).with_context(|| format!("running {line}"))
    }
}

/// Carry out `cmd` on `item` (the selected one): what it did, in words for the message line;
/// an error says why nothing was done.
pub(crate) fn carry_out(cmd: Command, item: Option<&Item>, ctx: &mut Ctx<'_>) -> Result<String> {
    if cmd == Command::New {
        return new_commission(ctx);
    }
    let item = item.ok_or_else(|| anyhow!("nothing selected"))?;
    let (home, project, id) = (ctx.home, ctx.project, item.id.as_str());
    match (cmd, item.kind) {
        (Command::Cancel, Kind::Commission) => {
            crate::ops::commission::ask(project, id, Desired::Cancelled)?;
            Ok(format!("{id}: wrote desired: cancelled"))
        }
        (Command::Cancel, Kind::Plan) => {
            crate::ops::plan::request(home, project, id, PlanStatus::Cancelled)?;
            Ok(format!("plan {id}: wrote status: cancelled"))
        }
        (Command::Redispatch, Kind::Commission) => {
            crate::ops::commission::redispatch(project, id)?;
            Ok(format!("{id}: wrote status: pending (a new attempt)"))
        }
        (Command::Redispatch, Kind::Plan) => {
            crate::ops::plan::request(home, project, id, PlanStatus::Pending)?;
            Ok(format!("plan {id}: wrote status: pending (retry)"))
        }
        (Command::Dispatch, Kind::Commission) => {
            crate::ops::commission::ask(project, id, Desired::Dispatched)?;
            Ok(format!("{id}: wrote desired: dispatched"))
        }
        (Command::Accept, Kind::Meeting) => {
            if item.status != MeetingStatus::Requested.as_str() {
                bail!("meeting {id} is {}: only a request is accepted", item.status);
            }
            let mut accept = ctx.cli(&["meeting", "accept", "--", id]);
            let status = (ctx.run)(&mut accept)?;
            if !status.success() {
                bail!("meeting accept {id} failed (see above)");
            }
            let mut chat = ctx.cli(&["meeting", "chat", "--", id]);
            (ctx.run)(&mut chat)?;
            Ok(format!("meeting {id} accepted"))
        }
        (Command::Decline, Kind::Meeting) => {
            crate::ops::meeting::decline(home, project, id, None)?;
            Ok(format!("meeting {id} declined"))
        }
        (Command::Chat, Kind::Meeting) => {
            if item.status != MeetingStatus::Open.as_str() {
                bail!("meeting {id} is {}: only an open meeting can chat (a for a request)", item.status);
            }
            let mut chat = ctx.cli(&["meeting", "chat", "--", id]);
            (ctx.run)(&mut chat)?;
            Ok(format!("back from meeting {id}"))
        }
        (Command::Log, kind) => {
            // What the CLI shows (control characters escaped), paged.
            let args: Vec<&str> = match kind {
                // A running worker's log follows in the pager as it grows (`F` in less).
                Kind::Commission if item.alive => vec!["logs", "-f", "--", id],
                Kind::Commission => vec!["logs", "--", id],
                Kind::Plan => vec!["plan", "show", "--", id],
                Kind::Meeting => vec!["meeting", "show", "--", id],
            };
            let cli = ctx.cli(&args);
            let mut argv: Vec<&std::ffi::OsStr> = vec![cli.get_program()];
            argv.extend(cli.get_args());
            ctx.shell("\"$@\" 2>&1 | ${PAGER:-less}", &argv)?;
            Ok(String::new())
        }
        (Command::Edit, _) => {
            let path = item.path.clone();
            ctx.shell("${VISUAL:-${EDITOR:-vi}} \"$1\"", &[path.as_os_str()])?;
            Ok(format!("edited {}", path.display()))
        }
        (Command::Approve | Command::Revise | Command::Reject, Kind::Commission) => {
            use crate::ops::commission::Verdict;
            let verdict = match cmd {
                Command::Approve => Verdict::Approve,
                Command::Revise => {
                    Verdict::Revise(vec![crate::artifact::Feedback { text: ctx.comment.to_string(), path: None, line: None }])
                }
                _ => Verdict::Reject(None),
            };
            let edits = crate::ops::commission::review(project, id, &verdict)?;
            let desired = edits.iter().find_map(|e| match e {
                crate::artifact::write::Edit::Set(k, v) if k == "desired" => v.as_str().map(str::to_string),
                _ => None,
            });
            Ok(format!("{id}: wrote desired: {}", desired.unwrap_or_default()))
        }
        (Command::Approve | Command::Revise | Command::Reject, _) => bail!("a, v and x answer a commission in review"),
        (Command::Abandon, Kind::Commission) => {
            crate::ops::commission::abandon(project, id, None)?;
            Ok(format!("{id}: wrote desired: abandoned"))
        }
        (Command::Abandon, _) => bail!("X abandons a commission"),
        (Command::Answer, Kind::Commission) => {
            let q = crate::ops::commission::answer(project, id, ctx.typed, None)?;
            Ok(format!("{id}: wrote the answer to question {} ({:?})", q.number, q.question))
        }
        (Command::Answer, _) => bail!("t answers a commission's worker's question"),
        (Command::Cancel, Kind::Meeting) => bail!("a meeting is closed from its chat (m, then /close)"),
        (Command::Redispatch, _) => bail!("r re-dispatches a failed or cancelled commission, or retries a halted plan"),
        (Command::Dispatch, _) => bail!("d dispatches a draft commission"),
        (Command::Accept | Command::Decline | Command::Chat, _) => bail!("a, x and m are for meetings"),
        (Command::Quit | Command::Reconcile | Command::New, _) => Ok(String::new()),
    }
}

/// The template `n` opens, with `worker` filled in ([`default_worker`]) or, when none is
/// installed that could run it, left empty with a comment that says so.
fn template(worker: Option<&str>) -> String {
    let worker = match worker {
        Some(w) => format!("worker: {w}\n"),
        None => "# No installed worker package can run a commission: install one (`guild-hall workers add scribe`)\n\
                 # and name it here (`guild-hall workers` lists them).\nworker: \"\"\n"
            .to_string(),
    };
    format!(
        "---\n# A new commission: give it a title and write the prompt below, then save and quit.\n\
         # An empty title writes nothing. `status: draft` keeps it from running until dispatched.\n\
         title: \"\"\n{worker}status: pending\n# dependencies: [path/that/must/exist.md]\n---\n{PROMPT_HINT}\n"
    )
}

/// The worker a new commission's template names: an installed package that can run a
/// commission now, one made for commissions alone (not a meeting partner) first; by name
/// within each. `None` when no package can run one.
fn default_worker(catalog: &crate::worker::Catalog) -> Option<String> {
    let ready = |n: &&String| catalog.for_commission(n).is_ok() && catalog.cannot_start(n).is_none();
    let mut names: Vec<&String> = catalog.packages.keys().filter(ready).collect();
    // Stable: by name within each group.
    names.sort_by_key(|n| catalog.packages.get(*n).is_some_and(|p| p.can_meet()));
    names.first().map(|n| n.to_string())
}

const PROMPT_HINT: &str = "The outcome wanted, and how the worker can verify it is done.";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default)]
    title: Option<String>,
    worker: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

/// What the person wrote in the template, as the commission to create; `None` when the title
/// was left empty (nothing to write).
pub(crate) fn read_template(path: &Path, text: &str) -> Result<Option<crate::ops::commission::NewCommission>> {
    let split = crate::artifact::frontmatter::split(text).map_err(|(line, why)| anyhow!("{}:{line}: {why}", path.display()))?;
    let w: Written = serde_yaml_ng::from_str(split.yaml).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let title = w.title.unwrap_or_default();
    if title.trim().is_empty() {
        return Ok(None);
    }
    let prompt = split.body.trim();
    if prompt.is_empty() || prompt == PROMPT_HINT {
        bail!("{}: the prompt (below the frontmatter) is still empty: it is what the worker works from", path.display());
    }
    let draft = match w.status.as_deref() {
        None | Some("pending") => false,
        Some("draft") => true,
        Some(other) => bail!("{}: status: {other}: a new commission is pending or draft", path.display()),
    };
    Ok(Some(crate::ops::commission::NewCommission {
        worker: w
            .worker
            .filter(|w| !w.trim().is_empty())
            .ok_or_else(|| anyhow!("{}: no worker: name the worker package that does the work", path.display()))?,
        title,
        prompt: prompt.to_string(),
        depends: w.dependencies,
        draft,
        ..Default::default()
    }))
}

/// `n`: a template in `$EDITOR`, then `ops::commission::create` with what was written. A file
/// that cannot be used is kept, and named with why.
fn new_commission(ctx: &mut Ctx<'_>) -> Result<String> {
    let catalog = crate::worker::Catalog::discover(&ctx.project.root, &ctx.home.workers_dir());
    let worker = default_worker(&catalog);
    let worker = worker.as_deref();
    let file = tempfile::Builder::new().prefix("guild-hall-new-commission-").suffix(".md").tempfile().context("a file for the template")?;
    std::fs::write(file.path(), template(worker)).with_context(|| format!("writing {}", file.path().display()))?;
    let path: PathBuf = file.path().to_path_buf();
    let status = ctx.shell("${VISUAL:-${EDITOR:-vi}} \"$1\"", &[path.as_os_str()])?;
    if !status.success() {
        // Editors exit non-zero after an error even when the text was saved: what was
        // written is kept, never dropped with the temp file.
        let written = std::fs::read_to_string(&path).is_ok_and(|t| t != template(worker));
        if written {
            let kept = file.keep().map(|(_, p)| p).unwrap_or(path);
            return Ok(format!("the editor failed: nothing written; your text is kept in {}", kept.display()));
        }
        return Ok("the editor failed: nothing written".into());
    }
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let made = read_template(&path, &text).and_then(|new| match new {
        None => Ok(None),
        Some(new) => crate::ops::commission::create(ctx.home, ctx.project, &new).map(Some),
    });
    match made {
        Ok(None) => Ok("no title: nothing written".into()),
        Ok(Some(id)) => Ok(format!("wrote commission {id}")),
        Err(e) => {
            // The person's text is not lost: the file stays, named in the error.
            let kept = file.keep().map(|(_, p)| p).unwrap_or(path);
            Err(e.context(format!("nothing written; your text is kept in {}", kept.display())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_reads_back() {
        let p = Path::new("/tmp/new.md");
        let filled = template(Some("scribe")).replace("title: \"\"", "title: Survey it").replace(PROMPT_HINT, "Write the survey.");
        let new = read_template(p, &filled).expect("valid").expect("a commission");
        assert_eq!(
            (new.title.as_str(), new.worker.as_str(), new.prompt.as_str(), new.draft),
            ("Survey it", "scribe", "Write the survey.", false)
        );
        assert!(read_template(p, &template(Some("scribe"))).expect("valid").is_none(), "an empty title writes nothing");
        let unfilled = template(Some("scribe")).replace("title: \"\"", "title: Survey it");
        assert!(read_template(p, &unfilled).unwrap_err().to_string().contains("prompt"));
        let bad = filled.replace("status: pending", "status: completed");
        assert!(read_template(p, &bad).unwrap_err().to_string().starts_with("/tmp/new.md: status: completed"));
        let broken = filled.replace("worker: scribe", "worker: [");
        assert!(read_template(p, &broken).unwrap_err().to_string().starts_with("/tmp/new.md"));
        let draft = filled.replace("status: pending", "status: draft");
        assert!(read_template(p, &draft).expect("valid").expect("some").draft);
        // No worker to name: left empty, with a comment; left so, it is refused in words.
        let none = template(None);
        assert!(none.contains("worker: \"\"\n") && none.contains("guild-hall workers add scribe"), "{none}");
        let unnamed = none.replace("title: \"\"", "title: Survey it").replace(PROMPT_HINT, "Write the survey.");
        assert!(read_template(p, &unnamed).unwrap_err().to_string().contains("no worker"));
    }

    #[test]
    fn the_template_names_a_worker_made_for_commissions() {
        let mut catalog = crate::worker::Catalog::with(&["counsel", "scribe", "sleeper"]);
        let both = vec!["meeting".to_string(), "commission".to_string()];
        if let Some(p) = catalog.packages.get_mut("counsel") {
            p.manifest.capabilities = both.clone();
        }
        assert_eq!(default_worker(&catalog).as_deref(), Some("scribe"), "not counsel, a meeting partner");
        // A meeting partner that can run commissions, when it is the only one.
        let mut only = crate::worker::Catalog::with(&["counsel", "talker"]);
        if let Some(p) = only.packages.get_mut("counsel") {
            p.manifest.capabilities = both;
        }
        if let Some(p) = only.packages.get_mut("talker") {
            p.manifest.capabilities = vec!["meeting".into()];
        }
        assert_eq!(default_worker(&only).as_deref(), Some("counsel"));
        if let Some(p) = only.packages.get_mut("counsel") {
            p.manifest.capabilities = vec!["meeting".into()];
        }
        assert_eq!(default_worker(&only), None, "no package can run a commission");
    }
}
