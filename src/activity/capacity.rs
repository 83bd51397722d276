//! The worker slots of one round, shared by every kind that launches workers: the project's
//! cap (`commission_cap`) and the home's (`max_concurrent_commissions`), and who holds a slot —
//! other projects, this project's orphaned workers and wave tasks, and what each kind decided
//! before holds; and, for `max_concurrent:`, the live attempts by package and what the kinds
//! decided before start of each. The pass observes it once a round and hands it to every kind.

use super::kind::Name;

/// The slots of a round, and who holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Capacity {
    /// The project's cap on its workers (commissions and wave tasks together).
    pub(crate) project_cap: usize,
    /// The home's cap on the workers of all its projects.
    pub(crate) home_cap: usize,
    /// Workers of other projects under this home that are alive (commissions and wave tasks).
    pub(crate) elsewhere: usize,
    /// This project's commission workers still running for an artifact that is gone (deleted,
    /// or not in the branch checked out): left alone, but they hold a slot.
    pub(crate) orphans: usize,
    /// This project's wave tasks whose worker runs.
    pub(crate) tasks: usize,
    /// What the kinds decided earlier in this round hold once their actions are carried out
    /// (workers running and those they start), by kind.
    held: Vec<(Name, usize)>,
    /// A daily budget reached: no new commission is dispatched this round.
    pub(crate) daily: Option<super::budget::DailyReached>,
    /// Live attempts by worker package, of every project in this home, but this project's
    /// commissions (their decider counts those): what a package's `max_concurrent:` caps.
    pub(crate) by_package: std::collections::BTreeMap<String, usize>,
    /// This project's live commission attempts by worker package (those `by_package` leaves
    /// out): wave tasks count them against `max_concurrent:`.
    pub(crate) commissions_by_package: std::collections::BTreeMap<String, usize>,
    /// The attempts the kinds decided earlier in this round start, by kind and worker package:
    /// a package's `max_concurrent:` is one cap for the round, whichever kind starts its
    /// attempts (a commission's and a wave task's of one package never both take its last).
    started: Vec<(Name, std::collections::BTreeMap<String, usize>)>,
}

impl Capacity {
    pub(crate) fn new(project_cap: usize, home_cap: usize, elsewhere: usize, orphans: usize, tasks: usize) -> Capacity {
        Capacity {
            project_cap,
            home_cap,
            elsewhere,
            orphans,
            tasks,
            held: Vec::new(),
            daily: None,
            by_package: Default::default(),
            commissions_by_package: Default::default(),
            started: Vec::new(),
        }
    }

    /// `kind`, decided: its actions start an attempt of each package in `packages` (one per
    /// start). Said again, it replaces what the kind said before.
    pub(crate) fn start_packages<'p>(&mut self, kind: Name, packages: impl IntoIterator<Item = &'p str>) {
        let mut by = std::collections::BTreeMap::new();
        for p in packages {
            *by.entry(p.to_string()).or_insert(0) += 1;
        }
        match self.started.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, started)) => *started = by,
            None => self.started.push((kind, by)),
        }
    }

    /// `kind`, decided: its workers hold `n` slots once its actions are carried out.
    pub(crate) fn hold(&mut self, kind: Name, n: usize) {
        match self.held.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, held)) => *held = n,
            None => self.held.push((kind, n)),
        }
    }

    /// Live attempts by worker package, every one in this home, and those the kinds decided
    /// before start this round: what a wave task's package's `max_concurrent:` counts (the
    /// plans' own starts this round are their decider's to add).
    pub(crate) fn packages_for_tasks(&self) -> std::collections::BTreeMap<String, usize> {
        let mut all = self.by_package.clone();
        let started = self.started.iter().filter(|(k, _)| *k != Name::Plan).flat_map(|(_, by)| by);
        for (name, n) in self.commissions_by_package.iter().chain(started) {
            *all.entry(name.clone()).or_insert(0) += n;
        }
        all
    }

    /// The slots the caps leave beside this project's orphans and what the kinds decided so far
    /// hold, and beside other projects' workers: what wave tasks may take. The plans' own
    /// running tasks are not subtracted here: their decider counts them from their records.
    pub(crate) fn left_for_tasks(&self) -> usize {
        let busy = self.orphans + self.held.iter().map(|(_, n)| n).sum::<usize>();
        self.project_cap.saturating_sub(busy).min(self.home_cap.saturating_sub(busy + self.elsewhere))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn what_is_left_for_tasks_by_who_holds_the_slots() {
        // (project cap, home cap, elsewhere, orphans, held by commissions) → left.
        let table = [
            ((3, 10, 0, 0, 0), 3),
            ((3, 10, 0, 0, 2), 1),
            ((3, 10, 0, 1, 2), 0),
            ((3, 10, 0, 0, 5), 0),
            ((3, 4, 2, 0, 1), 1),
            ((3, 4, 5, 0, 0), 0),
            ((5, 2, 0, 0, 0), 2),
        ];
        for ((project, home, elsewhere, orphans, commissions), left) in table {
            let mut c = Capacity::new(project, home, elsewhere, orphans, 7);
            c.hold(Name::Commission, commissions);
            assert_eq!(c.left_for_tasks(), left, "{c:?}");
        }
    }

    #[test]
    fn a_kind_said_again_replaces_what_it_held() {
        let mut c = Capacity::new(4, 10, 0, 0, 0);
        assert_eq!(c.left_for_tasks(), 4);
        c.hold(Name::Commission, 3);
        c.hold(Name::Commission, 1);
        c.hold(Name::Meeting, 0);
        assert_eq!(c.left_for_tasks(), 3);
        c.hold(Name::Meeting, 2);
        assert_eq!(c.left_for_tasks(), 1, "every kind's holding counts");
    }

    #[test]
    fn what_a_kind_starts_this_round_counts_for_the_tasks_packages() {
        let mut c = Capacity::new(4, 10, 0, 0, 0);
        c.by_package.insert("solo".into(), 1);
        c.commissions_by_package.insert("solo".into(), 1);
        c.start_packages(Name::Commission, ["solo", "solo", "other"]);
        let all = c.packages_for_tasks();
        assert_eq!(all.get("solo"), Some(&4), "live elsewhere, live here, and two started now: {all:?}");
        assert_eq!(all.get("other"), Some(&1), "{all:?}");
        // Said again, the kind's starts are replaced, not added to.
        c.start_packages(Name::Commission, ["other"]);
        assert_eq!(c.packages_for_tasks().get("solo"), Some(&2));
        // The plans' own starts are their decider's to count.
        c.start_packages(Name::Plan, ["other"]);
        assert_eq!(c.packages_for_tasks().get("other"), Some(&1));
    }

    proptest! {
        #[test]
        fn never_more_than_either_cap_leaves(project in 0..8usize, home in 0..8usize, elsewhere in 0..8usize, orphans in 0..4usize, held in 0..8usize) {
            let mut c = Capacity::new(project, home, elsewhere, orphans, 0);
            c.hold(Name::Commission, held);
            let left = c.left_for_tasks();
            prop_assert!(orphans + held + left <= project || left == 0);
            prop_assert!(orphans + held + elsewhere + left <= home || left == 0);
            // And nothing is kept back that both caps allow.
            prop_assert!(left == project.saturating_sub(orphans + held).min(home.saturating_sub(orphans + held + elsewhere)));
        }
    }
}
