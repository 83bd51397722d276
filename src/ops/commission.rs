//! What people and tools do to commissions: write a new one, read one by id, and ask for a change
//! (`desired:`, `status:`, a review's approve, revise and reject) by writing it into the file as
//! a person would (parity, REQ-COM-4); and
//! why a worker cannot take the work asked, in the words every entry point uses ([`unusable`]). The
//! reconciler does the rest.

use anyhow::{anyhow, bail, Context, Result};
use serde_yaml_ng::Value;

use crate::activity::kind::Name;
use crate::artifact::ids;
use crate::artifact::store::content_hash;
use crate::artifact::write::{self, Edit};
use crate::artifact::{Commission, Status};
use crate::config::{Home, Project};
use crate::worker::Catalog;

/// A commission to create.
#[derive(Debug, Clone, Default)]
pub struct NewCommission {
    pub worker: String,
    pub title: String,
    pub prompt: String,
    pub depends: Vec<String>,
    pub draft: bool,
    pub id: Option<String>,
    pub max_turns: Option<u64>,
    pub max_budget_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

/// Refuse, up front and with how to install it, work for a worker that is not installed or
/// cannot take work (a typo, most often): `commission create` and `plan create` ask this; a
/// hand-written file waits for its package instead.
pub(crate) fn usable_worker(catalog: &Catalog, worker: &str) -> Result<()> {
    catalog.for_commission(worker).map(|_| ()).map_err(|e| anyhow!("{}; nothing written", unusable(catalog, worker, e)))
}

/// Why `worker` cannot take the work asked, in the words every entry point uses: the pass's
/// [`Catalog::not_installed`] (where packages are looked for, a did-you-mean, how to install a
/// bundled one) when it is not installed, else `why` (invalid, or without the capability)
/// with where to look.
pub(crate) fn unusable(catalog: &Catalog, worker: &str, why: impl std::fmt::Display) -> String {
    match catalog.not_installed(worker) {
        Some(words) => words,
        None => format!("{why} (see `guild-hall workers`)"),
    }
}

/// Write a new commission artifact (the same file a person would write) and return its id: the
/// one asked for, refused if anything of it exists, else the first free one from the title.
pub fn create(home: &Home, project: &Project, new: &NewCommission) -> Result<String> {
    create_with(home, project, new, |_| new.prompt.clone())
}

/// [`create`], the prompt made for the id it gets (a planner's names its output by it).
pub(crate) fn create_with(home: &Home, project: &Project, new: &NewCommission, prompt_for: impl Fn(&str) -> String) -> Result<String> {
    let catalog = Catalog::discover(&project.root, &home.workers_dir());
    usable_worker(&catalog, &new.worker)?;
    if new.title.trim().is_empty() {
        bail!("the title must not be empty");
    }
    if new.prompt.trim().is_empty() {
        bail!("the prompt is empty: it is what the worker works from");
    }
    let deps = new.depends.iter().map(|d| ids::validate_rel_path(d)).collect::<Result<Vec<_>, _>>()?;
    let dir = project.commissions_dir();
    crate::artifact::make_lore_dir(&dir)?;
    let base = new.id.clone().unwrap_or_else(|| ids::slugify(&new.title));
    let base_text = crate::artifact::commission::New {
        title: new.title.clone(),
        date: Some(chrono::Utc::now().format("%Y-%m-%d").to_string()),
        status: if new.draft { Status::Draft } else { Status::Pending },
        worker: new.worker.clone(),
        // The FIFO key, stamped when the commission is made rather than when a pass first sees it.
        created: crate::activity::timeline::timestamp(chrono::Utc::now()),
        dependencies: deps,
        resources: crate::artifact::commission::Resources {
            max_turns: new.max_turns,
            max_budget_usd: new.max_budget_usd,
            max_tokens: new.max_tokens,
            ..Default::default()
        },
        body: String::new(),
    };
    // Read back by the parser every pass (and `check`) uses: a file that would be invalid the
    // moment it exists (a title over the frontmatter's size limit, say) is never written.
    super::create_with_free_id(home, project, Name::Commission, &base, new.id.is_some(), |id| {
        let text = crate::artifact::commission::render(&crate::artifact::commission::New { body: prompt_for(id), ..base_text.clone() });
        crate::artifact::create_new(&project.commission_path(id), &text, "commission", Commission::parse).map(|_| ())
    })
}

/// Read and validate one commission by id.
pub(crate) fn load(project: &Project, id: &str) -> Result<Commission> {
    Ok(crate::artifact::load(&project.commission_path(id), id, &crate::artifact::Wording::COMMISSION, Commission::parse)?)
}

/// Write intent keys into the artifact, surgically and atomically, all or none. The
/// reconciler may be writing the same file: a concurrent change means read again and retry,
/// never clobber.
pub(crate) fn request(project: &Project, id: &str, edits: &[Edit]) -> Result<()> {
    for _ in 0..40 {
        let c = load(project, id)?;
        let text = crate::artifact::read_regular(&c.path)?;
        if content_hash(&text) == c.hash {
            let new = write::apply(&text, edits)?;
            if crate::artifact::store::replace_if_unchanged(&c.path, c.hash, new.as_bytes())? {
                return Ok(());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    bail!("{} keeps changing; nothing written, try again", project.commission_path(id).display())
}

/// Ask for a dispatch or a cancel (`desired:`), refused up front — nothing written — where the
/// reconciler would refuse it (`commission::decide::desired_refusal`); the edit written.
pub fn ask(project: &Project, id: &str, desired: crate::artifact::Desired) -> Result<Edit> {
    let c = load(project, id)?;
    let status = c.status.unwrap_or(Status::Pending);
    if let Some(why) = crate::commission::decide::desired_refusal(status, desired) {
        bail!("{id} is {status}: {why}; nothing written");
    }
    let edit = Edit::Set("desired".into(), Value::from(desired.as_str()));
    request(project, id, std::slice::from_ref(&edit))?;
    Ok(edit)
}

/// Give commission `id` up for good (`desired: abandoned`, with the person's words as its
/// `feedback:`, as a rejection has them), refused up front — nothing written — unless it is
/// pending, blocked, failed or cancelled; the edits written.
pub fn abandon(project: &Project, id: &str, reason: Option<&str>) -> Result<Vec<Edit>> {
    let c = load(project, id)?;
    let status = c.status.unwrap_or(Status::Pending);
    let desired = crate::artifact::Desired::Abandoned;
    if let Some(why) = crate::commission::decide::desired_refusal(status, desired) {
        bail!("{id} is {status}: {why}; nothing written");
    }
    let mut edits = vec![Edit::Set("desired".into(), Value::from(desired.as_str()))];
    match reason.map(str::trim).filter(|t| !t.is_empty()) {
        Some(text) => {
            let said = [crate::artifact::commission::Feedback { text: text.to_string(), path: None, line: None }];
            edits.push(Edit::Set("feedback".into(), serde_yaml_ng::to_value(said)?));
        }
        None if !c.feedback.is_empty() => edits.push(Edit::Remove("feedback".into())),
        None => {}
    }
    request(project, id, &edits)?;
    Ok(edits)
}

/// A person's answer to a question its worker waits on (`answer:`, which the reconciler takes
/// into `questions:` and hands to the worker), refused up front — nothing written — when no
/// question of its worker is open (or not question `question`); the question answered.
pub(crate) fn answer(project: &Project, id: &str, text: &str, question: Option<u32>) -> Result<crate::commission::questions::Open> {
    if text.trim().is_empty() {
        bail!("an answer needs its text; nothing written");
    }
    let c = load(project, id)?;
    let status = c.status.unwrap_or(Status::Pending);
    let open = crate::commission::questions::open_in(&c);
    let asked = match question {
        _ if !status.is_active() => bail!("{id} is {status}: no question of its worker waits for an answer; nothing written"),
        Some(n) => open.into_iter().find(|q| q.number == n).with_context(|| format!("{id} has no open question {n}; nothing written"))?,
        None => open.into_iter().next().with_context(|| format!("{id} has no open question; nothing written"))?,
    };
    // The question the person was shown, by its number: another asked meanwhile is not it.
    let wanted = crate::artifact::commission::AnswerRequest::To { question: asked.number, text: text.to_string() };
    request(project, id, &[Edit::Set("answer".into(), wanted.value())])?;
    Ok(asked)
}

/// Set a failed or cancelled commission back to pending for a new attempt (the only ones a
/// person may re-dispatch); the edits written. Its `reason:` goes with the old status — the pass
/// would remove it anyway ([`crate::activity::kind::stale_reason_goes`]), and until then a
/// `pending` commission would show the old failure as if it were why it waits; the timeline
/// keeps it. Any other is refused up front, in the words of the reconciler's refusal
/// ([`crate::commission::decide::refusal`]) where it has one.
pub fn redispatch(project: &Project, id: &str) -> Result<Vec<Edit>> {
    let c = load(project, id)?;
    match c.status {
        // The request table's moves back to pending, less the draft's: starting a draft is not a
        // new attempt of anything, so re-dispatch is the table's rule narrowed to ended attempts.
        Some(s) if s != Status::Draft && crate::commission::decide::person_may_request(s, Status::Pending) => {
            let mut edits = vec![Edit::Set("status".into(), Value::from("pending"))];
            if c.owned.reason.is_some() {
                edits.push(Edit::Remove("reason".into()));
            }
            request(project, id, &edits)?;
            Ok(edits)
        }
        // What the reconciler would refuse, in its words (a completed commission is final, a
        // running one can only be cancelled); nothing written.
        Some(s) if !matches!(s, Status::Draft | Status::Pending) => {
            let why = crate::commission::decide::refusal(s, Status::Pending);
            bail!("{id} is {s}: refused status change {s} -> pending: {why}; nothing written")
        }
        other => {
            bail!("{id} is {}: only a failed or cancelled commission can be re-dispatched", other.map(|s| s.as_str()).unwrap_or("pending"))
        }
    }
}

/// A person's answer to work in review, as every face asks it (the CLI's `approve`, `revise`,
/// `reject`, the board's keys, `worker/approve|revise|reject` over JSON-RPC and MCP): written
/// as the one-shot request an editor would write (`desired:`, with `feedback:`), refused up
/// front — nothing written — unless the commission is in review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Merge the work (`desired: approved`).
    Approve,
    /// A new attempt on the same branch, given this feedback (`desired: revised`).
    Revise(Vec<crate::artifact::commission::Feedback>),
    /// Give the work up, its branch kept (`desired: rejected`, with the person's words).
    Reject(Option<String>),
}

impl Verdict {
    fn desired(&self) -> crate::artifact::Desired {
        match self {
            Verdict::Approve => crate::artifact::Desired::Approved,
            Verdict::Revise(_) => crate::artifact::Desired::Revised,
            Verdict::Reject(_) => crate::artifact::Desired::Rejected,
        }
    }
}

/// Write a person's verdict on commission `id` in review ([`Verdict`]); the edits written.
pub fn review(project: &Project, id: &str, verdict: &Verdict) -> Result<Vec<Edit>> {
    let c = load(project, id)?;
    let status = c.status.unwrap_or(Status::Pending);
    let desired = verdict.desired();
    if let Some(why) = crate::commission::decide::desired_refusal(status, desired) {
        bail!("{id} is {status}: {why}; nothing written");
    }
    let feedback = match verdict {
        Verdict::Approve => Vec::new(),
        Verdict::Revise(items) => {
            if items.is_empty() || items.iter().any(|f| f.text.trim().is_empty()) {
                bail!("a revision needs feedback: say what to change (-m TEXT, or --at PATH:LINE TEXT); nothing written");
            }
            for f in items {
                if let Some(p) = &f.path {
                    ids::validate_rel_path(p).map_err(|e| anyhow!("bad feedback path {p:?}: {e}; nothing written"))?;
                }
            }
            items.clone()
        }
        Verdict::Reject(text) => text
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| crate::artifact::commission::Feedback { text: t.clone(), path: None, line: None })
            .collect(),
    };
    let mut edits = vec![Edit::Set("desired".into(), Value::from(desired.as_str()))];
    if !feedback.is_empty() {
        edits.push(Edit::Set("feedback".into(), serde_yaml_ng::to_value(&feedback)?));
    } else if !c.feedback.is_empty() {
        // An earlier request's feedback is not this one's.
        edits.push(Edit::Remove("feedback".into()));
    }
    request(project, id, &edits)?;
    Ok(edits)
}
