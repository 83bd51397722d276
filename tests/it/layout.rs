//! The layering of the library (docs/hacking.md, "Code layout"), read from its `crate::` references:
//! no cycle between its top-level modules, and the kinds (commission, meeting, plan) import
//! neither each other nor anything above them (the loop, the operations, the faces).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every top-level module of `src/` and the top-level modules its code names (`crate::x`),
/// comments and `#[cfg(test)] mod tests` blocks left out.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeSet::new();
    for e in std::fs::read_dir(&src).expect("src") {
        let name = e.expect("entry").file_name().to_string_lossy().trim_end_matches(".rs").to_string();
        if !["lib", "main", "cli", "fuzz_tests"].contains(&name.as_str()) {
            modules.insert(name);
        }
    }
    let mut graph = BTreeMap::new();
    for m in &modules {
        let mut uses = BTreeSet::new();
        let mut files = vec![src.join(format!("{m}.rs"))];
        let mut dirs = vec![src.join(m)];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        for f in files.iter().filter(|f| f.exists()) {
            let text = std::fs::read_to_string(f).expect("read");
            let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let name: String = line[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if modules.contains(&name) && name != *m {
                        uses.insert(name);
                    }
                }
            }
        }
        graph.insert(m.clone(), uses);
    }
    graph
}

#[test]
fn the_library_has_no_module_cycle() {
    let graph = graph();
    assert!(graph.len() > 10 && graph["reconcile"].contains("commission"), "the graph was read: {graph:?}");
    // Depth-first, with the path kept: a module met again on its own path closes a cycle.
    fn visit<'a>(m: &'a str, g: &'a BTreeMap<String, BTreeSet<String>>, path: &mut Vec<&'a str>, done: &mut BTreeSet<&'a str>) {
        if let Some(i) = path.iter().position(|p| *p == m) {
            panic!("a module cycle: {} -> {m}", path[i..].join(" -> "));
        }
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for n in &g[m] {
            visit(n, g, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_kinds_import_no_other_kind_and_nothing_above_them() {
    let graph = graph();
    let above = ["commission", "meeting", "plan", "reconcile", "ops", "service", "schema"];
    for kind in ["commission", "meeting", "plan"] {
        let wrong: Vec<_> = graph[kind].iter().filter(|m| above.contains(&m.as_str())).collect();
        assert!(wrong.is_empty(), "{kind} imports {wrong:?}");
    }
}

/// Slurm is one runner's business: its name appears under `src/` only inside the runners
/// (`src/worker/runner/`) and the configuration, schema and package keys that name it for the
/// person (`runner: slurm`, `slurm:`, `sandbox.slurm_client`). Anything else says "runner".
#[test]
fn slurm_is_named_only_inside_its_runner_and_the_keys_that_name_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = ["config.rs", "artifact/schema.rs", "artifact/commission.rs", "worker/package.rs"];
    let mut wrong = Vec::new();
    let mut dirs = vec![src.clone()];
    let mut seen = 0;
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("src dir").flatten() {
            let p = e.path();
            let rel = p.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
            if p.is_dir() {
                if rel != "worker/runner" {
                    dirs.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") && !allowed.contains(&rel.as_str()) {
                seen += 1;
                let text = std::fs::read_to_string(&p).expect("read");
                for (n, line) in text.lines().enumerate().filter(|(_, l)| l.to_ascii_lowercase().contains("slurm")) {
                    wrong.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(seen > 50, "the sources were read ({seen} files)");
    assert!(wrong.is_empty(), "Slurm named outside its runner:\n{}", wrong.join("\n"));
}
