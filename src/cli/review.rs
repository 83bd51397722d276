//! `approve`, `revise` and `reject`: a person's verdict on a commission in review, written as
//! the one-shot request an editor would write (`desired:` with `feedback:`) through
//! `ops::commission::review`, the operation every face uses; the reconciler carries it out.

use anyhow::{anyhow, Result};
use clap::Args;

use super::out::{say, say_json};
use super::Env;
use guild_hall::artifact::write::Edit;
use guild_hall::artifact::Feedback;
use guild_hall::ops::commission::Verdict;

/// `guild-hall approve <id>`.
#[derive(Debug, Args)]
pub struct Approve {
    /// The commission in review: its file stem under .lore/commissions/.
    #[arg(value_name = "COMMISSION")]
    id: String,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

/// `guild-hall revise <id> -m TEXT [--at PATH:LINE TEXT]...`.
#[derive(Debug, Args)]
pub struct Revise {
    /// The commission in review: its file stem under .lore/commissions/.
    #[arg(value_name = "COMMISSION")]
    id: String,
    /// What to change, in general. Repeatable (each is one item of feedback).
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    message: Vec<String>,
    /// What to change at one place of the work: PATH:LINE (or PATH) and the comment.
    /// Repeatable.
    #[arg(long = "at", num_args = 2, value_names = ["PATH:LINE", "TEXT"])]
    at: Vec<String>,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

/// `guild-hall reject <id> [-m TEXT]`.
#[derive(Debug, Args)]
pub struct Reject {
    /// The commission in review: its file stem under .lore/commissions/.
    #[arg(value_name = "COMMISSION")]
    id: String,
    /// Why (kept in its `reason:` and the timeline).
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    message: Option<String>,
    /// Print what was written as JSON.
    #[arg(long)]
    json: bool,
}

pub fn approve(env: &Env, a: &Approve) -> Result<()> {
    write(env, &a.id, &Verdict::Approve, a.json, "approved: its work is squash-merged into the integration branch")
}

pub fn revise(env: &Env, r: &Revise) -> Result<()> {
    let mut feedback: Vec<Feedback> = r.message.iter().map(|m| Feedback { text: m.clone(), path: None, line: None }).collect();
    for pair in r.at.chunks(2) {
        let [place, text] = pair else { return Err(anyhow!("--at takes PATH:LINE and TEXT")) };
        feedback.push(at(place, text)?);
    }
    write(env, &r.id, &Verdict::Revise(feedback), r.json, "sent back: a new attempt continues on the same branch, given your feedback")
}

pub fn reject(env: &Env, r: &Reject) -> Result<()> {
    write(env, &r.id, &Verdict::Reject(r.message.clone()), r.json, "rejected: it is cancelled, its branch kept")
}

/// `PATH:LINE` (or `PATH`) and the comment, as one item of feedback.
fn at(place: &str, text: &str) -> Result<Feedback> {
    let (path, line) = match place.rsplit_once(':') {
        Some((p, l)) if !p.is_empty() && l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty() => {
            (p.to_string(), Some(l.parse::<u32>().map_err(|_| anyhow!("--at {place}: the line number is too large"))?))
        }
        _ => (place.to_string(), None),
    };
    Ok(Feedback { text: text.to_string(), path: Some(path), line })
}

/// The request a command wrote on commission `id`, as `--json` gives it: `{id, wrote, removed}`.
pub(super) fn say_edits_json(id: &str, edits: &[Edit]) -> Result<()> {
    let mut wrote = serde_json::Map::new();
    let mut removed = Vec::new();
    for e in edits {
        match e {
            Edit::Set(k, v) => {
                wrote.insert(k.clone(), serde_json::to_value(v)?);
            }
            Edit::Remove(k) => removed.push(k.clone()),
        }
    }
    say_json!("{}", serde_json::to_string_pretty(&serde_json::json!({"id": id, "wrote": wrote, "removed": removed}))?);
    Ok(())
}

fn write(env: &Env, id: &str, verdict: &Verdict, json: bool, what: &str) -> Result<()> {
    let edits = guild_hall::ops::commission::review(&env.project, id, verdict)?;
    if json {
        say_edits_json(id, &edits)?;
    } else {
        say!(
            "{id}: {what} (wrote desired: {}); `guild-hall reconcile --once` (or a running `guild-hall watch`) carries it out",
            desired(&edits)
        );
    }
    Ok(())
}

fn desired(edits: &[Edit]) -> &str {
    edits
        .iter()
        .find_map(|e| match e {
            Edit::Set(k, v) if k == "desired" => v.as_str(),
            _ => None,
        })
        .unwrap_or("?")
}
