//! Why a commission still to run waits: the one sentence the pass, `check` and `status` say.

use super::deps::Cycles;
use crate::activity::reason::Reason;
use crate::commission::observe::{Observed, Snapshot};

/// Why a commission still to run waits (`blocked`), if it does: dependencies not on the
/// integration branch (or, given `cycles`, a cycle among them), else its worker's package not
/// ready ([`crate::worker::Catalog::cannot_start`]: a person still writing a package must not
/// cost an attempt). The pass, `check` and `status` all say this, so they agree.
pub(crate) fn waiting(o: &Observed, workers: &crate::worker::Catalog, integration_branch: &str, cycles: Option<&Cycles>) -> Option<String> {
    if !o.missing_deps.is_empty() {
        return Some(match cycles.and_then(|c| c.reason(o.id())) {
            Some(why) => why,
            None => {
                let missing =
                    format!("missing dependencies (not on {integration_branch}, where its worktree starts): {}", o.missing_deps.join(", "));
                match &o.deps_on_base {
                    // Committed on the person's branch only: say what brings them in, or it
                    // waits with nothing to tell a person why.
                    Some(on) => {
                        let (base, there) = (&on.branch, on.deps.join(", "));
                        let is = if on.deps.len() == 1 { "is" } else { "are" };
                        if on.followed {
                            format!("{missing}; {there} {is} on {base} but not on {integration_branch}: the automatic sync (`follow: {base}`) has not brought it in; `guild-hall sync` says what stops it")
                        } else {
                            format!(
                                "{missing}; {there} {is} on {base} but not on {integration_branch}: run `guild-hall sync` to bring {base} in (or set `follow: {base}` in {} to do it before each pass)",
                                crate::config::ProjectConfig::PATH
                            )
                        }
                    }
                    None => missing,
                }
            }
        });
    }
    workers.cannot_start(&o.artifact.worker)
}

/// Its worker's package runs as many attempts as its `max_concurrent:` allows in this home:
/// it waits (`blocked`) for one to end. Counted from live attempts only (this project's
/// commissions as observed, everything else from the round's capacity), so nothing drifts.
pub(super) fn package_full(s: &Snapshot, o: &Observed) -> Option<Reason> {
    let worker = &o.artifact.worker;
    let max = s.workers.packages.get(worker)?.manifest.max_concurrent?.get();
    (live_of(s, worker) >= max).then(|| Reason::PackageAtCapacity { worker: worker.clone(), max })
}

/// The live attempts of `worker`'s package: this project's commissions at work (or about to
/// be started again), and every other one the round's capacity saw.
pub(super) fn live_of(s: &Snapshot, worker: &str) -> usize {
    let here = s
        .commissions
        .iter()
        .filter(|c| c.artifact.worker == worker)
        .filter(|c| c.attempt.at_work() || (c.attempt.untaken() && c.record.as_ref().is_some_and(|r| r.status.is_active())))
        .count();
    here + s.running_by_package.get(worker).copied().unwrap_or(0)
}

/// A package's `max_concurrent:`, if it has one.
pub(super) fn package_cap(s: &Snapshot, worker: &str) -> Option<usize> {
    s.workers.packages.get(worker)?.manifest.max_concurrent.map(std::num::NonZeroUsize::get)
}
