//! Dependencies between commissions through their declared `outputs:`: who waits on whom,
//! and the cycles among those waits (each commission in one is told a cycle through it, and
//! none is waited on). Linear in the input (commissions, dependencies and outputs), iterative
//! (no recursion to overflow on a long chain), and bounded in what it writes.

use std::collections::HashMap;

use crate::artifact::{Problem, Status};
use crate::commission::observe::{Observed, Snapshot};

/// The cycles among waiting commissions: A waits on B when a dependency A is missing is one of
/// B's declared `outputs` and B has not ended (A may be B: it waits on its own output).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Cycles {
    /// Distinct cycles, each as the commissions in waiting order starting at its smallest id;
    /// sorted. Every commission in a cycle is in one of these that passes through it (unless
    /// its knot was too tangled to afford one each, see [`WORK_BUDGET`]).
    pub(crate) cycles: Vec<Vec<String>>,
    /// A commission in a cycle: the index of its cycle in `cycles`, and its place in that
    /// cycle (`None` only past the budget: then it is its knot's first cycle).
    of: HashMap<String, (usize, Option<usize>)>,
    /// The number of commissions in each cycle's knot (strongly connected component).
    knot: Vec<usize>,
    /// The place in each cycle of the commission it was found for (a knot's first cycle: its
    /// smallest id, at 0): a long cycle is told around it.
    focus: Vec<usize>,
}

impl Cycles {
    pub(crate) fn is_empty(&self) -> bool {
        self.cycles.is_empty()
    }

    /// Why `id` waits for ever, if it is in a cycle: `dependency cycle: a -> b -> a`.
    pub(crate) fn reason(&self, id: &str) -> Option<String> {
        let &(i, at) = self.of.get(id)?;
        let cycle = &self.cycles[i];
        Some(if at.is_some() {
            format!("dependency cycle: {}", cycle_text(cycle, at))
        } else {
            format!(
                "dependency cycle: {id} is one of {} commissions that wait on each other's outputs, among them {}",
                self.knot[i],
                cycle_text(cycle, None)
            )
        })
    }
}

/// Steps spent finding a cycle through each commission of a knot beyond the first cycle: past
/// it, the rest of a knot are told the knot's first cycle. Only a knot of thousands of
/// commissions, densely tangled, gets near it; it bounds a pass whatever the input.
const WORK_BUDGET: usize = 4_000_000;

/// A cycle as text, closed (`a -> b -> a`). A long one shows its start, its end and, around
/// its `focus`-th commission, the commissions next to it, with the rest counted: a reason
/// stays short enough to be written into an artifact's frontmatter whatever the cycle's length.
fn cycle_text(cycle: &[String], focus: Option<usize>) -> String {
    const FULL: usize = 24;
    let n = cycle.len();
    let mut shown = vec![n <= FULL; n];
    if n > FULL {
        let near = |i: usize| focus.is_some_and(|k| i + 1 >= k && i <= k + 1);
        for (i, s) in shown.iter_mut().enumerate() {
            *s = i < 3 || i >= n - 3 || near(i);
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut hidden = 0usize;
    for (c, show) in cycle.iter().zip(&shown) {
        if *show {
            if hidden > 0 {
                parts.push(format!("… ({hidden} more)"));
                hidden = 0;
            }
            parts.push(c.clone());
        } else {
            hidden += 1;
        }
    }
    parts.push(cycle[0].clone());
    let text = parts.join(" -> ");
    if n > FULL {
        format!("{text} (a cycle of {n} commissions)")
    } else {
        text
    }
}

/// The cycles among waiting commissions of a snapshot.
pub(crate) fn dependency_cycles(s: &Snapshot) -> Cycles {
    let live = |o: &&Observed| !o.artifact.status.is_some_and(Status::is_terminal);
    let mut commissions: Vec<&Observed> = s.commissions.iter().filter(live).collect();
    // Nodes in id order: the smallest node of a knot is its smallest id.
    commissions.sort_by(|a, b| a.id().cmp(b.id()));
    let n = commissions.len();
    // Who produces a path.
    let mut producers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, o) in commissions.iter().enumerate() {
        for out in &o.artifact.outputs {
            let p = producers.entry(out.as_str()).or_default();
            if p.last() != Some(&i) {
                p.push(i);
            }
        }
    }
    // A graph of commissions and the paths between them (commission -> a path it waits on ->
    // each commission that declares it): its size is that of the input, where an edge per
    // (waiter, producer) pair would be quadratic (a thousand commissions all waiting on one
    // path a thousand others declare).
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut path_node: HashMap<&str, usize> = HashMap::new();
    for (i, o) in commissions.iter().enumerate() {
        for d in &o.missing_deps {
            let Some(by) = producers.get(d.as_str()) else { continue };
            let node = *path_node.entry(d.as_str()).or_insert_with(|| {
                adj.push(by.clone());
                adj.len() - 1
            });
            adj[i].push(node);
        }
    }
    for out in &mut adj {
        out.sort_unstable();
        out.dedup();
    }
    let found = graph::cycles(&adj, |v| v < n, WORK_BUDGET);
    let mut named: Vec<Vec<String>> =
        found.cycles.iter().map(|c| c.iter().filter(|&&v| v < n).map(|&v| commissions[v].id().to_string()).collect()).collect();
    let mut order: Vec<usize> = (0..named.len()).collect();
    order.sort_by(|&a, &b| named[a].cmp(&named[b]));
    let mut index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        index[old] = new;
    }
    let mut of: HashMap<String, (usize, Option<usize>)> = HashMap::new();
    let mut focus = vec![0; found.cycles.len()];
    // Each commission's place on the cycle it is told (a walk over the cycles: bounded by
    // their total length, which the budget bounds).
    for (c, cycle) in found.cycles.iter().enumerate() {
        for (place, &v) in cycle.iter().filter(|&&v| v < n).enumerate() {
            if found.focus[c] == v {
                focus[index[c]] = place;
            }
            if found.of[v] == Some((c, true)) {
                of.insert(commissions[v].id().to_string(), (index[c], Some(place)));
            }
        }
    }
    for (o, at) in commissions.iter().zip(&found.of) {
        if let Some((c, false)) = at {
            of.insert(o.id().to_string(), (index[*c], None));
        }
    }
    let knot = order.iter().map(|&old| found.knot[old]).collect();
    let cycles = order.iter().map(|&old| std::mem::take(&mut named[old])).collect();
    Cycles { cycles, of, knot, focus }
}

/// The cycles as problems, one each, pointing at the `dependencies:` of the commission it was
/// found for (a knot's first cycle: its smallest id) and told around it; and one for each
/// commission that is in a knot but on none of them (past the budget).
pub(crate) fn cycle_problems(s: &Snapshot, cycles: &Cycles) -> Vec<Problem> {
    if cycles.is_empty() {
        return Vec::new();
    }
    let by_id: HashMap<&str, &Observed> = s.commissions.iter().map(|o| (o.id(), o)).collect();
    let at = |id: &str, msg: String| {
        let o = by_id.get(id)?;
        let (line, col) = o.artifact.dependencies_at;
        Some(Problem::new(&o.artifact.path, line, col, msg))
    };
    let mut problems: Vec<Problem> = cycles
        .cycles
        .iter()
        .zip(&cycles.focus)
        .filter_map(|(cycle, &focus)| {
            let how =
                if cycle.len() == 1 { "it waits on an output it declares itself" } else { "each waits on an output another declares" };
            at(&cycle[focus], format!("dependency cycle: {} ({how})", cycle_text(cycle, Some(focus))))
        })
        .collect();
    let mut off: Vec<&String> = cycles.of.iter().filter(|(_, (_, at))| at.is_none()).map(|(id, _)| id).collect();
    off.sort();
    problems.extend(off.into_iter().filter_map(|id| at(id, cycles.reason(id)?)));
    problems
}

/// Cycles of a directed graph given as adjacency lists, in time linear in its size.
mod graph {
    use std::collections::VecDeque;

    const NONE: usize = usize::MAX;

    /// The strongly connected component of each node (Tarjan's algorithm, iterative: a chain
    /// of any length costs no stack). Components are numbered in the order they complete.
    pub(crate) fn components(adj: &[Vec<usize>]) -> Vec<usize> {
        let n = adj.len();
        let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
        let mut on_stack = vec![false; n];
        let mut stack: Vec<usize> = Vec::new();
        // The depth-first search as an explicit stack of (node, next edge to follow).
        let mut calls: Vec<(usize, usize)> = Vec::new();
        let (mut next, mut count) = (0, 0);
        for root in 0..n {
            if index[root] != NONE {
                continue;
            }
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            calls.push((root, 0));
            while let Some(top) = calls.last_mut() {
                let v = top.0;
                if let Some(&w) = adj[v].get(top.1) {
                    top.1 += 1;
                    if index[w] == NONE {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        calls.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(u, _)) = calls.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = count;
                        if w == v {
                            break;
                        }
                    }
                    count += 1;
                }
            }
        }
        comp
    }

    /// What [`cycles`] finds.
    #[derive(Debug, Default)]
    pub(crate) struct Found {
        /// Simple cycles (nodes in edge order, each starting at its smallest node).
        pub(crate) cycles: Vec<Vec<usize>>,
        /// Per cycle, how many `member` nodes its component holds.
        pub(crate) knot: Vec<usize>,
        /// Per cycle, the node it was found for: its component's smallest for the first, else
        /// the member it was made to pass through.
        pub(crate) focus: Vec<usize>,
        /// Per node: for a `member` on some cycle, the cycle it is told about and whether
        /// that cycle passes through it.
        pub(crate) of: Vec<Option<(usize, bool)>>,
    }

    /// For every `member` node on a cycle, a simple cycle through it. Per component with a
    /// cycle: the shortest cycle through its smallest node (the root); then, for each member
    /// on no cycle found so far, one through it cut from the closed walk root -> it -> root
    /// along the two shortest-path trees of the root. Members share cycles, so a ring of any
    /// length costs one cycle. `budget` bounds the steps spent on the later cycles: past it a
    /// member is told its component's first cycle (`false` in `of`).
    pub(crate) fn cycles(adj: &[Vec<usize>], member: impl Fn(usize) -> bool, mut budget: usize) -> Found {
        let n = adj.len();
        let comp = components(adj);
        let mut radj: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (v, out) in adj.iter().enumerate() {
            for &w in out {
                radj[w].push(v);
            }
        }
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); comp.iter().map(|c| c + 1).max().unwrap_or(0)];
        for v in 0..n {
            groups[comp[v]].push(v);
        }
        // Components with a cycle, in order of their smallest node (each group is in order).
        groups.retain(|g| g.len() > 1 || g.first().is_some_and(|&v| adj[v].contains(&v)));
        groups.sort_by_key(|g| g[0]);
        let mut found = Found { of: vec![None; n], ..Found::default() };
        // The two shortest-path trees of a component's root: `from` (the node before, on a
        // shortest path from the root) and `to` (the node after, on one to the root), with
        // the lengths of those paths; `NONE` outside the component being looked at.
        let (mut from, mut to) = (Tree::new(n), Tree::new(n));
        // Position of a node on the path root -> v being looked at.
        let mut on_path = vec![NONE; n];
        for group in &groups {
            let root = group[0];
            let c = comp[root];
            let members = group.iter().filter(|&&v| member(v)).count();
            from.grow(root, adj, &comp, c);
            to.grow(root, &radj, &comp, c);
            // The shortest cycle through the root: to its successor nearest the root, and back.
            let next = adj[root].iter().copied().filter(|&w| comp[w] == c).min_by_key(|&w| to.len[w]);
            let mut first = vec![root];
            if let Some(w) = next.filter(|&w| w != root) {
                first.extend(to.path(w, root));
            }
            let first_index = found.cycles.len();
            mark(&mut found, first, root, &member, members);
            for &v in group {
                if !member(v) || found.of[v].is_some() {
                    continue;
                }
                let cost = from.len[v] + to.len[v] + 2;
                if cost > budget {
                    found.of[v] = Some((first_index, false));
                    continue;
                }
                budget -= cost;
                // root ..= v, in order.
                let mut there: Vec<usize> = from.path(v, root);
                there.push(root);
                there.reverse();
                for (i, &p) in there.iter().enumerate() {
                    on_path[p] = i;
                }
                // v and the way back, up to the first node that is also on the way there
                // (the root at the latest): from there, the way there closes a simple cycle.
                let mut cycle = Vec::new();
                let mut cut = 0;
                for q in to.path(v, root).into_iter().chain([root]) {
                    if q != v && on_path[q] != NONE {
                        cut = on_path[q];
                        break;
                    }
                    cycle.push(q);
                }
                for &p in &there {
                    on_path[p] = NONE;
                }
                cycle.extend_from_slice(&there[cut..there.len() - 1]);
                let start = cycle.iter().enumerate().min_by_key(|&(_, x)| *x).map(|(i, _)| i).unwrap_or(0);
                cycle.rotate_left(start);
                mark(&mut found, cycle, v, &member, members);
            }
            from.clear(group);
            to.clear(group);
        }
        found
    }

    /// Record a cycle and give it to its members that have none yet.
    fn mark(found: &mut Found, cycle: Vec<usize>, focus: usize, member: &impl Fn(usize) -> bool, members: usize) {
        let i = found.cycles.len();
        for &v in &cycle {
            if member(v) && found.of[v].is_none() {
                found.of[v] = Some((i, true));
            }
        }
        found.cycles.push(cycle);
        found.knot.push(members);
        found.focus.push(focus);
    }

    /// A breadth-first tree: each reached node's neighbour towards the root, and its distance.
    struct Tree {
        parent: Vec<usize>,
        len: Vec<usize>,
    }

    impl Tree {
        fn new(n: usize) -> Tree {
            Tree { parent: vec![NONE; n], len: vec![NONE; n] }
        }

        /// Breadth-first from `root` over the edges of `adj` that stay in component `c`.
        fn grow(&mut self, root: usize, adj: &[Vec<usize>], comp: &[usize], c: usize) {
            let mut queue = VecDeque::from([root]);
            self.parent[root] = root;
            self.len[root] = 0;
            while let Some(v) = queue.pop_front() {
                for &w in &adj[v] {
                    if comp[w] == c && self.parent[w] == NONE {
                        self.parent[w] = v;
                        self.len[w] = self.len[v] + 1;
                        queue.push_back(w);
                    }
                }
            }
        }

        /// `v` and the nodes after it towards the root, the root excluded.
        fn path(&self, v: usize, root: usize) -> Vec<usize> {
            let mut out = Vec::new();
            let mut x = v;
            while x != root {
                out.push(x);
                x = self.parent[x];
            }
            out
        }

        fn clear(&mut self, nodes: &[usize]) {
            for &v in nodes {
                self.parent[v] = NONE;
                self.len[v] = NONE;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::graph::{components, cycles};
    use super::*;
    use crate::artifact::Commission;
    use crate::config::{Project, ProjectConfig};
    use crate::worker::Catalog;

    // --- the graph algorithm ---

    /// Every node reachable from each node (itself included), by brute force.
    fn closure(adj: &[Vec<usize>]) -> Vec<Vec<bool>> {
        let n = adj.len();
        let mut r = vec![vec![false; n]; n];
        for v in 0..n {
            r[v][v] = true;
            for &w in &adj[v] {
                r[v][w] = true;
            }
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    if r[i][k] && r[k][j] {
                        r[i][j] = true;
                    }
                }
            }
        }
        r
    }

    fn on_a_cycle(adj: &[Vec<usize>], r: &[Vec<bool>], v: usize) -> bool {
        adj[v].iter().any(|&w| r[w][v])
    }

    /// The length of a shortest cycle through `v`, by breadth-first search from each successor.
    fn shortest_cycle(adj: &[Vec<usize>], v: usize) -> Option<usize> {
        let mut dist = vec![usize::MAX; adj.len()];
        let mut queue = std::collections::VecDeque::new();
        for &w in &adj[v] {
            if dist[w] == usize::MAX {
                dist[w] = 1;
                queue.push_back(w);
            }
        }
        while let Some(x) = queue.pop_front() {
            if x == v {
                return Some(dist[x]);
            }
            for &w in &adj[x] {
                if dist[w] == usize::MAX {
                    dist[w] = dist[x] + 1;
                    queue.push_back(w);
                }
            }
        }
        None
    }

    fn is_simple_cycle(adj: &[Vec<usize>], c: &[usize]) -> bool {
        let distinct = c.iter().collect::<std::collections::BTreeSet<_>>().len() == c.len();
        let linked = (0..c.len()).all(|i| adj[c[i]].contains(&c[(i + 1) % c.len()]));
        !c.is_empty() && distinct && linked && c.iter().min() == c.first()
    }

    /// Checks every promise of [`cycles`] against the brute-force reference.
    fn check_against_reference(adj: &[Vec<usize>], member: impl Fn(usize) -> bool + Copy, budget: usize) {
        let n = adj.len();
        let r = closure(adj);
        let comp = components(adj);
        for u in 0..n {
            for v in 0..n {
                assert_eq!(comp[u] == comp[v], r[u][v] && r[v][u], "components of {u} and {v} in {adj:?}");
            }
        }
        let found = cycles(adj, member, budget);
        assert_eq!(found.cycles.len(), found.knot.len());
        assert_eq!(found.cycles.len(), found.focus.len());
        for (c, focus) in found.cycles.iter().zip(&found.focus) {
            assert!(is_simple_cycle(adj, c), "{c:?} is not a simple cycle of {adj:?}");
            assert!(c.contains(focus), "{c:?} was found for {focus}");
        }
        for v in 0..n {
            let want = member(v) && on_a_cycle(adj, &r, v);
            assert_eq!(found.of[v].is_some(), want, "node {v} of {adj:?}: {found:?}");
            if let Some((i, through)) = found.of[v] {
                let c = &found.cycles[i];
                assert_eq!(c.contains(&v), through, "node {v}, cycle {c:?}");
                assert!(comp[c[0]] == comp[v], "node {v} told a cycle of another component: {c:?}");
                assert_eq!(found.knot[i], (0..n).filter(|&x| comp[x] == comp[v] && member(x)).count());
                if budget == usize::MAX {
                    assert!(through, "node {v} with an unbounded budget is on its cycle");
                }
            }
        }
        // The first cycle of each component is a shortest one through its smallest node.
        let mut seen = std::collections::BTreeSet::new();
        for c in &found.cycles {
            if seen.insert(comp[c[0]]) {
                assert_eq!(Some(c.len()), shortest_cycle(adj, c[0]), "first cycle {c:?} of {adj:?}");
            }
        }
    }

    fn arb_graph() -> impl Strategy<Value = Vec<Vec<usize>>> {
        (1usize..9).prop_flat_map(|n| prop::collection::vec(prop::collection::vec(0..n, 0..4), n))
    }

    proptest! {
        #[test]
        fn cycles_match_a_brute_force_reference(adj in arb_graph(), odd_only in any::<bool>(), budget in prop_oneof![Just(0usize), Just(3), Just(usize::MAX)]) {
            check_against_reference(&adj, |_| true, budget);
            if odd_only {
                check_against_reference(&adj, |v| v % 2 == 1, budget);
            }
        }
    }

    #[test]
    fn a_self_loop_is_a_cycle_of_one() {
        let adj = vec![vec![0], vec![]];
        let found = cycles(&adj, |_| true, usize::MAX);
        assert_eq!(found.cycles, vec![vec![0]]);
        assert_eq!(found.of, vec![Some((0, true)), None]);
        check_against_reference(&adj, |_| true, usize::MAX);
    }

    #[test]
    fn two_cycles_sharing_a_node_are_both_named() {
        // 0 <-> 1 <-> 2: every node gets a cycle through it.
        let adj = vec![vec![1], vec![0, 2], vec![1]];
        let found = cycles(&adj, |_| true, usize::MAX);
        assert_eq!(found.cycles, vec![vec![0, 1], vec![1, 2]]);
        assert_eq!(found.of, vec![Some((0, true)), Some((0, true)), Some((1, true))]);
    }

    /// `layers` layers of two nodes, each pointing at both nodes of the next layer: 2^layers
    /// paths, which a search that enumerates paths never finishes.
    fn diamond(layers: usize) -> Vec<Vec<usize>> {
        (0..2 * layers).map(|v| if v / 2 + 1 < layers { vec![(v / 2 + 1) * 2, (v / 2 + 1) * 2 + 1] } else { vec![] }).collect()
    }

    #[test]
    fn a_diamond_has_no_cycle_and_a_closed_one_names_every_node() {
        let adj = diamond(30);
        let found = cycles(&adj, |_| true, usize::MAX);
        assert!(found.cycles.is_empty());
        let mut closed = diamond(30);
        closed[58] = vec![0];
        closed[59] = vec![1];
        let found = cycles(&closed, |_| true, usize::MAX);
        assert!(found.of.iter().all(|o| matches!(o, Some((_, true)))), "{found:?}");
        assert_eq!(found.cycles[0].len(), 30);
        for c in &found.cycles {
            assert!(is_simple_cycle(&closed, c));
        }
        check_against_reference(&diamond(6), |_| true, usize::MAX);
    }

    #[test]
    fn a_long_chain_and_a_long_ring_cost_no_stack() {
        // Deeper than any thread's stack would allow a recursive search.
        let n = 200_000;
        let mut adj: Vec<Vec<usize>> = (0..n).map(|v| if v + 1 < n { vec![v + 1] } else { vec![] }).collect();
        assert!(cycles(&adj, |_| true, usize::MAX).cycles.is_empty());
        adj[n - 1] = vec![0];
        let found = cycles(&adj, |_| true, usize::MAX);
        assert_eq!(found.cycles.len(), 1);
        assert_eq!(found.cycles[0], (0..n).collect::<Vec<_>>());
        assert!(found.of.iter().all(|o| *o == Some((0, true))));
    }

    #[test]
    fn past_the_budget_a_node_is_told_its_knots_first_cycle() {
        // 0 <-> 1 <-> 2 <-> 3: the first cycle is 0 -> 1; 2 and 3 need more.
        let adj = vec![vec![1], vec![0, 2], vec![1, 3], vec![2]];
        let found = cycles(&adj, |_| true, 0);
        assert_eq!(found.cycles, vec![vec![0, 1]]);
        assert_eq!(found.of, vec![Some((0, true)), Some((0, true)), Some((0, false)), Some((0, false))]);
        assert_eq!(found.knot, vec![4]);
    }

    // --- commissions ---

    fn waiting(id: &str, deps: &[&str], outputs: &[&str]) -> Observed {
        let list = |v: &[&str]| v.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>().join(", ");
        let text =
            format!("---\nworker: scribe\nstatus: blocked\ndependencies: [{}]\noutputs: [{}]\n---\nDo it.\n", list(deps), list(outputs));
        let c = Commission::parse(&PathBuf::from(format!(".lore/commissions/{id}.md")), &text).expect("test artifact parses");
        let mut o = Observed::new(c, None);
        o.missing_deps = deps.iter().map(|d| d.to_string()).collect();
        o
    }

    fn snapshot(commissions: Vec<Observed>) -> Snapshot {
        Snapshot {
            now: chrono::Utc::now(),
            project: Project { root: PathBuf::from("/nonexistent"), name: "p".into(), config: ProjectConfig::default() },
            max_concurrent: 10,
            running_elsewhere: 0,
            running_orphans: 0,
            tasks_running: 0,
            daily_budget: None,
            running_by_package: Default::default(),
            commissions,
            schedules: Vec::new(),
            problems: Vec::new(),
            workers: Catalog::with(&["scribe"]),
        }
    }

    fn out(id: &str) -> String {
        format!(".lore/out/{id}.md")
    }

    #[test]
    fn a_commission_waiting_on_its_own_output_is_a_cycle() {
        let s = snapshot(vec![waiting("a", &[".lore/a.md"], &[".lore/a.md"]), waiting("b", &[".lore/x.md"], &[])]);
        let c = dependency_cycles(&s);
        assert_eq!(c.cycles, vec![vec!["a".to_string()]]);
        assert_eq!(c.reason("a").as_deref(), Some("dependency cycle: a -> a"));
        assert_eq!(c.reason("b"), None);
        let p = cycle_problems(&s, &c);
        assert_eq!(p.len(), 1);
        assert!(p[0].message.contains("a -> a (it waits on an output it declares itself)"), "{}", p[0].message);
    }

    #[test]
    fn each_commission_of_a_knot_is_told_a_cycle_through_it() {
        // a <-> b <-> c, and d waits on a without being waited on.
        let s = snapshot(vec![
            waiting("a", &[&out("b")], &[&out("a")]),
            waiting("b", &[&out("a"), &out("c")], &[&out("b")]),
            waiting("c", &[&out("b")], &[&out("c")]),
            waiting("d", &[&out("a")], &[&out("d")]),
        ]);
        let c = dependency_cycles(&s);
        assert_eq!(c.cycles, vec![vec!["a".to_string(), "b".into()], vec!["b".to_string(), "c".into()]]);
        assert_eq!(c.reason("a").as_deref(), Some("dependency cycle: a -> b -> a"));
        assert_eq!(c.reason("b").as_deref(), Some("dependency cycle: a -> b -> a"));
        assert_eq!(c.reason("c").as_deref(), Some("dependency cycle: b -> c -> b"));
        assert_eq!(c.reason("d"), None);
        let p: Vec<String> = cycle_problems(&s, &c).iter().map(|p| p.message.clone()).collect();
        assert_eq!(
            p,
            vec![
                "dependency cycle: a -> b -> a (each waits on an output another declares)".to_string(),
                "dependency cycle: b -> c -> b (each waits on an output another declares)".into()
            ]
        );
    }

    #[test]
    fn ended_commissions_and_present_dependencies_make_no_cycle() {
        let mut b = waiting("b", &[&out("a")], &[&out("b")]);
        b.artifact.status = Some(Status::Completed);
        let mut c = waiting("c", &[&out("d")], &[&out("c")]);
        c.missing_deps.clear(); // its dependency is on the integration branch
        let d = waiting("d", &[&out("c")], &[&out("d")]);
        let s = snapshot(vec![waiting("a", &[&out("b")], &[&out("a")]), b, c, d]);
        assert!(dependency_cycles(&s).is_empty());
    }

    #[test]
    fn many_waiting_on_one_path_many_declare() {
        // 300 commissions each waiting on x.md, which 300 others declare (and those wait on
        // y.md, which the first 300 declare): one knot of 600.
        let mut cs = Vec::new();
        for i in 0..300 {
            cs.push(waiting(&format!("w{i:03}"), &[".lore/x.md"], &[".lore/y.md"]));
            cs.push(waiting(&format!("p{i:03}"), &[".lore/y.md"], &[".lore/x.md"]));
        }
        let c = dependency_cycles(&snapshot(cs));
        for i in 0..300 {
            let r = c.reason(&format!("w{i:03}")).expect("in the knot");
            assert!(r.contains(&format!("w{i:03}")), "{r}");
        }
    }

    #[test]
    fn a_ring_of_ten_thousand_is_one_cycle_told_briefly() {
        let n = 10_000;
        let id = |i: usize| format!("c{i:05}");
        let ring: Vec<Observed> = (0..n).map(|i| waiting(&id(i), &[&out(&id((i + n - 1) % n))], &[&out(&id(i))])).collect();
        let s = snapshot(ring);
        let c = dependency_cycles(&s);
        assert_eq!(c.cycles.len(), 1);
        assert_eq!(c.cycles[0].len(), n);
        // c00000 waits on c09999's output: the cycle goes c00000 -> c09999 -> … -> c00001.
        // As docs/commissions.md shows it.
        assert_eq!(
            c.reason("c05000").as_deref(),
            Some(
                "dependency cycle: c00000 -> c09999 -> c09998 -> … (4996 more) -> c05001 -> c05000 -> c04999 -> … (4995 more) \
                 -> c00003 -> c00002 -> c00001 -> c00000 (a cycle of 10000 commissions)"
            )
        );
        let r = c.reason("c00001").expect("in the ring");
        assert!(r.ends_with("-> c00003 -> c00002 -> c00001 -> c00000 (a cycle of 10000 commissions)"), "{r}");
        assert!(r.len() < 400, "{r}");
        let p = cycle_problems(&s, &c);
        assert_eq!(p.len(), 1);
        assert!(p[0].message.len() < 400);
    }

    #[test]
    fn a_chain_and_a_diamond_of_commissions_have_no_cycle() {
        let n = 10_000;
        let id = |i: usize| format!("c{i:05}");
        let chain: Vec<Observed> = (0..n).map(|i| waiting(&id(i), &[&out(&id(i + 1))], &[&out(&id(i))])).collect();
        assert!(dependency_cycles(&snapshot(chain)).is_empty());
        // 30 layers of 2: each waits on both outputs of the layer before.
        let name = |l: usize, k: usize| format!("l{l:02}-{k}");
        let diamond: Vec<Observed> = (0..60)
            .map(|v| {
                let (l, k) = (v / 2, v % 2);
                let deps: Vec<String> = if l == 0 { vec![] } else { vec![out(&name(l - 1, 0)), out(&name(l - 1, 1))] };
                waiting(&name(l, k), &deps.iter().map(String::as_str).collect::<Vec<_>>(), &[&out(&name(l, k))])
            })
            .collect();
        assert!(dependency_cycles(&snapshot(diamond)).is_empty());
    }
}
