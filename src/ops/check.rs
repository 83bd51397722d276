//! `check`: every artifact (commissions, meetings, plans) and worker package validated as the
//! reconciler reads them — dependency cycles and unknown workers included — and the orphans
//! of the home and the attempts under way in another home, reported apart (they are the
//! home's state, not the artifacts').

use std::path::Path;

use anyhow::Result;

use crate::artifact::Problem;
use crate::commission::observe::observe;
use crate::config::{Home, Project};

/// What `check` found.
#[derive(Debug)]
pub struct Report {
    /// What is wrong in the artifacts and packages: `check` fails on any.
    pub problems: Vec<Problem>,
    /// What is left of artifacts that are gone (`guild-hall gc` removes it): reported only.
    pub orphans: Vec<Problem>,
    /// Commissions, meetings and plans whose artifact says they are at work while this home
    /// never started them (another home's, or a lost one's): reported only, with what to do.
    pub elsewhere: Vec<Problem>,
    pub commissions: usize,
    pub meetings: usize,
    pub plans: usize,
    pub packages: usize,
}

/// Validate the project's artifacts and worker packages; find the home's orphans.
pub fn check(home: &Home, project: &Project) -> Result<Report> {
    let snap = observe(home, project)?;
    let mut problems = snap.problems.clone();
    problems.extend(crate::commission::decide::cycle_problems(&snap, &crate::commission::decide::dependency_cycles(&snap)));
    for o in &snap.commissions {
        if let Err(why) = snap.workers.for_commission(&o.artifact.worker) {
            problems.push(at_key(&o.artifact.path, "worker", why));
        }
    }
    let now = crate::activity::timeline::timestamp(chrono::Utc::now());
    let (meetings, meeting_problems) = crate::meeting::observe::observe(home, project, &snap.workers, &now)?;
    problems.extend(meeting_problems);
    for o in &meetings.meetings {
        if let Err(why) = snap.workers.for_meeting(&o.meeting.worker) {
            problems.push(at_key(&o.meeting.path, "worker", why));
        }
    }
    let (plans, plan_problems) = crate::plan::observe::observe(home, project, &snap.workers, &now, 0)?;
    problems.extend(plan_problems);
    for o in &plans.plans {
        for t in o.plan.tasks() {
            if let Err(why) = snap.workers.for_commission(&t.worker) {
                problems.push(at_key(&o.plan.path, "waves", format!("wave {}, task {}: {why}", t.wave, t.label)));
            }
        }
        if let Some(f) = &o.plan.fixer {
            if let Err(why) = snap.workers.for_commission(f) {
                problems.push(at_key(&o.plan.path, "fixer", format!("fixer: {why}")));
            }
        }
    }
    let mut elsewhere: Vec<Problem> = snap
        .commissions
        .iter()
        .filter_map(|o| {
            Some(at_key(&o.artifact.path, "status", format!("commission {}: {}", o.artifact.id, o.elsewhere.as_ref()?.describe())))
        })
        .collect();
    elsewhere.extend(
        meetings
            .meetings
            .iter()
            .filter_map(|o| Some(at_key(&o.meeting.path, "status", crate::meeting::decide::elsewhere(&o.meeting, o.record.as_ref())?))),
    );
    elsewhere.extend(
        plans
            .plans
            .iter()
            .filter_map(|o| Some(at_key(&o.plan.path, "status", crate::plan::decide::elsewhere(&o.plan, o.record.as_ref())?))),
    );
    // Orphans are reported, not failed on: they are the home's state, not the artifacts'.
    let orphans: Vec<Problem> = crate::ops::gc::inventory(home, project)?
        .iter()
        .map(|o| Problem::new(&o.artifact, 1, 1, format!("{} (guild-hall gc removes it)", o.describe())))
        .collect();
    Ok(Report {
        problems,
        orphans,
        elsewhere,
        commissions: snap.commissions.len(),
        meetings: meetings.meetings.len(),
        plans: plans.plans.len(),
        packages: snap.workers.packages.len(),
    })
}

/// A problem at `key` of the frontmatter of the artifact at `path` (at its start when the key
/// cannot be found).
fn at_key(path: &Path, key: &str, why: impl Into<String>) -> Problem {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (line, col) =
        crate::artifact::frontmatter::split(&text).map(|s| crate::artifact::frontmatter::key_position(&s, key)).unwrap_or((1, 1));
    Problem::new(path, line, col, why)
}
