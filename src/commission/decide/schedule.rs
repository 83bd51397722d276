//! Scheduled commissions, decided (pure): from a template, the runs of it already written and
//! the time, which tick is due (at most one, however many were missed), whether a run written
//! before a crash is only to be counted, and when the next run is.

use chrono::{DateTime, Utc};
use serde_yaml_ng::Value;

use crate::artifact::schedule::{ScheduleStatus, Template};
use crate::artifact::write::Edit;
use crate::commission::observe::{ObservedSchedule, Snapshot};

/// What is due for a template now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing before `next` (none: it never runs again, or is not active).
    Wait { next: Option<DateTime<Utc>> },
    /// Write the run of `tick`, then count it; `late`: ticks before it were missed (they give
    /// no run of their own).
    Spawn { tick: DateTime<Utc>, late: bool },
    /// The run of `tick` was written and never counted (its pass ended between the two): count it.
    Count { tick: DateTime<Utc> },
    /// Its `repeat` runs are done: `completed`.
    Complete,
    /// It never ran and says no time to count from: stamp `created:` now, and count from it.
    Stamp,
}

/// What is due for `t`, whose runs written so far are at the ticks `runs`, at `now`.
pub(crate) fn due(t: &Template, runs: &[DateTime<Utc>], now: DateTime<Utc>) -> Due {
    let s = &t.schedule;
    if t.status != ScheduleStatus::Active {
        return Due::Wait { next: None };
    }
    if s.repeat.is_some_and(|r| s.runs_completed >= r) {
        return Due::Complete;
    }
    let Some(base) = s.last_run.or(t.since) else { return Due::Stamp };
    // A run after the last counted one exists: written, then its pass ended. Counted, never
    // written again (its id is its tick's).
    // A file named for a tick still to come is no run (a person's, or a hand-made name): it
    // would count that tick early and stall the template until then.
    if let Some(tick) = runs.iter().filter(|r| **r > base && **r <= now).min() {
        return Due::Count { tick: *tick };
    }
    match s.cron.last_in(base, now) {
        Some(tick) => Due::Spawn { tick, late: s.cron.next_after(base) != Some(tick) },
        None => Due::Wait { next: s.cron.next_after(base) },
    }
}

/// When `t`'s next run is due (now, if one is), for `status` and the watch's timer.
pub(crate) fn next_run(o: &ObservedSchedule) -> Option<DateTime<Utc>> {
    match due(&o.template, &o.runs, o.now) {
        Due::Wait { next } => next,
        Due::Spawn { .. } | Due::Count { .. } | Due::Stamp => Some(o.now),
        Due::Complete => None,
    }
}

/// One template's step: the run to write (its id and text), then the template's edits.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScheduleStep {
    /// The template's id.
    pub(crate) id: String,
    #[serde(skip)]
    pub(crate) path: std::path::PathBuf,
    /// The template's hash as read: its edits are dropped if it changed since.
    #[serde(skip)]
    pub(crate) hash: u64,
    /// The run to write first (id, text); none when only the template changes.
    pub(crate) run: Option<(String, String)>,
    /// The run to count in the template's `schedule:` (its tick and id), in place.
    #[serde(skip)]
    pub(crate) count: Option<(DateTime<Utc>, String)>,
    /// The template, as read: what counts a run ([`Template::counted`]).
    #[serde(skip)]
    pub(crate) template: Option<Box<Template>>,
    /// Its other edits (`status`, `completed`, `created`).
    pub(crate) edits: Vec<Edit>,
    /// What the step is, as said.
    pub(crate) what: String,
}

/// The steps due for every template of the snapshot.
pub(crate) fn steps(s: &Snapshot) -> Vec<ScheduleStep> {
    let mut out = Vec::new();
    for o in &s.schedules {
        let now = super::timestamp(o.now);
        let t = &o.template;
        let step = |run, count: Option<(DateTime<Utc>, String)>, edits, what: String| ScheduleStep {
            id: t.id.clone(),
            path: t.path.clone(),
            hash: t.hash,
            template: count.as_ref().map(|_| Box::new(t.clone())),
            run,
            count,
            edits,
            what,
        };
        let counted = || {
            let mut edits = Vec::new();
            if t.schedule.repeat.is_some_and(|r| t.schedule.runs_completed + 1 >= r) {
                edits.push(Edit::Set("status".into(), Value::String(ScheduleStatus::Completed.as_str().into())));
                edits.push(Edit::Set("completed".into(), Value::String(now.clone())));
            }
            edits
        };
        match due(t, &o.runs, o.now) {
            Due::Wait { .. } => {}
            Due::Spawn { tick, late } => {
                let (id, text) = t.run(tick, &now);
                let what = format!(
                    "{} run {id} for {}{}",
                    if late { "late" } else { "scheduled" },
                    tick.format("%Y-%m-%d %H:%M UTC"),
                    if late { " (earlier ticks missed while nothing ran)" } else { "" }
                );
                out.push(step(Some((id.clone(), text)), Some((tick, id)), counted(), what));
            }
            Due::Count { tick } => {
                let id = crate::artifact::schedule::run_id(&t.id, tick);
                let what = format!("run {id} counted (written before its pass ended)");
                out.push(step(None, Some((tick, id)), counted(), what));
            }
            Due::Complete => {
                let edits = vec![
                    Edit::Set("status".into(), Value::String(ScheduleStatus::Completed.as_str().into())),
                    Edit::Set("completed".into(), Value::String(now.clone())),
                ];
                out.push(step(None, None, edits, "completed: its repeat runs are done".into()));
            }
            Due::Stamp => {
                out.push(step(None, None, vec![Edit::Set("created".into(), Value::String(now.clone()))], "created stamped".into()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
    }

    fn template(schedule: &str, extra: &str) -> Template {
        let text = format!("---\ntype: scheduled\nworker: scribe\n{extra}schedule: {schedule}\n---\nDo it.\n");
        Template::parse(Path::new("c/nightly.md"), &text).expect("parses")
    }

    #[test]
    fn one_run_a_tick_at_most_one_late_and_repeat_completes() {
        let t = template("{cron: \"0 * * * *\", runs_completed: 0, last_run: 2026-11-28T18:00:00Z}", "");
        assert_eq!(due(&t, &[], at("2026-11-28T18:59:59Z")), Due::Wait { next: Some(at("2026-11-28T19:00:00Z")) });
        assert_eq!(due(&t, &[], at("2026-11-28T19:00:00Z")), Due::Spawn { tick: at("2026-11-28T19:00:00Z"), late: false });
        // Down from 18:30 to 22:10: one run, for the latest tick, said late.
        assert_eq!(due(&t, &[], at("2026-11-28T22:10:00Z")), Due::Spawn { tick: at("2026-11-28T22:00:00Z"), late: true });
        // Written and not counted: counted, not written again, whatever the time.
        let written = [at("2026-11-28T19:00:00Z")];
        assert_eq!(due(&t, &written, at("2026-11-28T23:00:00Z")), Due::Count { tick: at("2026-11-28T19:00:00Z") });
        // A file named for a tick not yet come is no run: the next tick is spawned on time.
        let early = [at("2026-11-29T05:00:00Z")];
        assert_eq!(due(&t, &early, at("2026-11-28T19:00:00Z")), Due::Spawn { tick: at("2026-11-28T19:00:00Z"), late: false });
        // Runs before the last counted one are history.
        assert_eq!(
            due(&t, &[at("2026-11-28T17:00:00Z")], at("2026-11-28T18:30:00Z")),
            Due::Wait { next: Some(at("2026-11-28T19:00:00Z")) }
        );
        let done = template("{cron: \"0 * * * *\", repeat: 2, runs_completed: 2, last_run: 2026-11-28T18:00:00Z}", "");
        assert_eq!(due(&done, &[], at("2026-11-28T22:00:00Z")), Due::Complete);
        let paused = template("{cron: \"0 * * * *\"}", "status: paused\ncreated: 2026-11-28T10:00:00.000Z\n");
        assert_eq!(due(&paused, &[], at("2026-11-28T22:00:00Z")), Due::Wait { next: None });
        let fresh = template("{cron: \"0 * * * *\"}", "");
        assert_eq!(due(&fresh, &[], at("2026-11-28T22:00:00Z")), Due::Stamp, "no time to count from: now");
    }

    #[test]
    fn the_last_run_completes_it_in_the_same_edit() {
        let t = template("{cron: \"0 * * * *\", repeat: 2, runs_completed: 1, last_run: 2026-11-28T18:00:00Z}", "");
        let o = ObservedSchedule { template: t, runs: Vec::new(), now: at("2026-11-28T19:00:30Z") };
        let text = "---\ntype: scheduled\nworker: scribe\nschedule: {cron: \"0 * * * *\", repeat: 2, runs_completed: 1, last_run: 2026-11-28T18:00:00Z}\n---\nDo it.\n";
        let step = &steps_at(o)[0];
        let (id, _) = step.run.as_ref().expect("a run");
        assert_eq!(id, "nightly-20261128-1900");
        let counted =
            step.template.as_ref().expect("the template").counted(text, step.count.as_ref().expect("a count").0, id).expect("counts");
        let after = crate::artifact::write::apply(&counted, &step.edits).expect("applies");
        let t = Template::parse(Path::new("c/nightly.md"), &after).expect("still a template");
        assert_eq!((t.status, t.schedule.runs_completed), (ScheduleStatus::Completed, 2));
        assert_eq!(t.schedule.last_run, Some(at("2026-11-28T19:00:00Z")));
        assert_eq!(t.schedule.last_spawned_id.as_deref(), Some("nightly-20261128-1900"));
        assert!(after.contains("cron: \"0 * * * *\"") || after.contains("cron: '0 * * * *'"), "the cron kept quoted: {after}");
    }

    fn steps_at(o: ObservedSchedule) -> Vec<ScheduleStep> {
        let mut s = super::super::tests::empty_snapshot();
        s.schedules = vec![o];
        steps(&s)
    }
}
