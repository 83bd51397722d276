//! Dependencies between commissions through their declared `outputs:`: who waits on whom,
//! and the cycles among those waits (each reported once, never waited on).

use crate::artifact::{Problem, Status};
use crate::commission::observe::{Observed, Snapshot};

/// Cycles among waiting commissions: A waits on B when a dependency A is missing is one of
/// B's declared `outputs` and B has not ended. Each cycle once, starting at its smallest id.
pub fn dependency_cycles(s: &Snapshot) -> Vec<Vec<String>> {
    use std::collections::BTreeMap;
    let live = |o: &Observed| !o.artifact.status.is_some_and(Status::is_terminal);
    let mut waits: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in s.commissions.iter().filter(|o| live(o)) {
        for b in s.commissions.iter().filter(|o| live(o) && o.id() != a.id()) {
            if a.missing_deps.iter().any(|d| b.artifact.outputs.contains(d)) {
                waits.entry(a.id()).or_default().push(b.id());
            }
        }
    }
    let mut cycles: Vec<Vec<String>> = Vec::new();
    fn walk<'a>(at: &'a str, path: &mut Vec<&'a str>, waits: &BTreeMap<&'a str, Vec<&'a str>>, out: &mut Vec<Vec<String>>) {
        if let Some(i) = path.iter().position(|p| *p == at) {
            let mut cycle: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            let min = cycle.iter().enumerate().min_by_key(|(_, id)| id.as_str()).map(|(i, _)| i).unwrap_or(0);
            cycle.rotate_left(min);
            if !out.contains(&cycle) {
                out.push(cycle);
            }
            return;
        }
        path.push(at);
        for next in waits.get(at).into_iter().flatten() {
            walk(next, path, waits, out);
        }
        path.pop();
    }
    for start in waits.keys() {
        walk(start, &mut Vec::new(), &waits, &mut cycles);
    }
    cycles.sort();
    cycles
}

/// The cycles as problems, one each, pointing at the first member's `dependencies:`.
pub fn cycle_problems(s: &Snapshot, cycles: &[Vec<String>]) -> Vec<Problem> {
    cycles
        .iter()
        .filter_map(|cycle| {
            let first = s.get(&cycle[0])?;
            let (line, col) = first.artifact.dependencies_at;
            let msg = format!("dependency cycle: {} -> {} (each waits on an output another declares)", cycle.join(" -> "), cycle[0]);
            Some(Problem::new(&first.artifact.path, line, col, msg))
        })
        .collect()
}
