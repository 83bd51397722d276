//! The layering of the library (docs/hacking.md, "Code layout"), read from its `crate::` references:
//! no cycle between its top-level modules, and the kinds (commission, meeting, plan) import
//! neither each other nor anything above them (the loop, the operations, the faces); and no cycle
//! between its files, read from their `crate::`, `super::` and `self::` paths (`KNOWN_CYCLES`
//! lists the ones still to break).

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

/// Cycles between files allowed to stand, each as its exact set of files (paths under `src/`):
/// none. The test fails on any cycle not listed here, and on a listed one that no longer stands,
/// so the list only ever shrinks; it is kept for the day a refactor must land in two steps.
const KNOWN_CYCLES: &[&[&str]] = &[];

#[test]
fn no_cycle_between_files_but_the_known_ones() {
    let graph = files::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")).graph();
    assert!(graph.len() > 50 && graph["commission/decide/mod.rs"].contains("commission/observe.rs"), "the graph was read: {graph:?}");
    let found = files::cycles(&graph);
    let known: Vec<BTreeSet<String>> = KNOWN_CYCLES.iter().map(|c| c.iter().map(|f| f.to_string()).collect()).collect();
    let mut problems = Vec::new();
    for cycle in found.iter().filter(|c| !known.contains(c)) {
        problems.push(format!("a cycle between files: {} (all of it: {cycle:?})", files::one_way_round(&graph, cycle)));
    }
    for cycle in known.iter().filter(|c| !found.contains(c)) {
        problems.push(format!("KNOWN_CYCLES lists {cycle:?}, which no longer stands as it is listed: take it out (or list what is left)"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_file_graph_is_read_from_paths_and_follows_re_exports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = [
        ("lib.rs", "pub mod a;\npub mod b;\nmod c;\n#[cfg(test)]\nmod t;\nfn f() {\n    crate::b::g();\n}\n"),
        ("main.rs", "use guild_hall::a::x;\nfn main() { crate::c::z(); }\n"),
        ("a/mod.rs", "mod x;\nmod y;\npub use self::x::Thing;\npub(crate) use y::Other;\n"),
        ("a/x.rs", "use super::y::{\n    Other as O,\n    helper,\n};\npub struct Thing;\n"),
        (
            "a/y.rs",
            "// crate::b::g, in a comment\n/* and crate::c::z */\nconst S: &str = \"crate::c::z\";\nconst R: &str = r#\"crate::b::g \"{\"#;\npub struct Other;\npub fn helper() {\n    let _ = super::Thing;\n}\n",
        ),
        ("b.rs", "mod inner;\nuse inner::k;\npub fn g() {}\n"),
        ("b/inner.rs", "pub fn k() {\n    super::g();\n}\n"),
        (
            "c.rs",
            "pub fn z() {\n    let _ = crate::a::Thing;\n    let _ = '{';\n}\n#[cfg(test)]\nmod tests {\n    use crate::b::g;\n    fn f() { let s = \"}\"; }\n}\npub fn w() {}\n",
        ),
        ("t.rs", "use crate::c::z;\n"),
    ];
    for (path, text) in tree {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let graph = files::read(dir.path()).graph();
    let edges: Vec<(&str, Vec<&str>)> = graph.iter().map(|(f, to)| (f.as_str(), to.iter().map(String::as_str).collect())).collect();
    assert_eq!(
        edges,
        [
            ("a/mod.rs", vec![]),
            ("a/x.rs", vec!["a/y.rs"]),
            ("a/y.rs", vec!["a/x.rs"]),
            ("b.rs", vec!["b/inner.rs"]),
            ("b/inner.rs", vec!["b.rs"]),
            ("c.rs", vec!["a/x.rs"]),
            ("lib.rs", vec!["b.rs"]),
        ]
    );
    let cycles = files::cycles(&graph);
    let set = |fs: &[&str]| fs.iter().map(|f| f.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(cycles.len(), 2, "{cycles:?}");
    assert!(cycles.contains(&set(&["a/x.rs", "a/y.rs"])) && cycles.contains(&set(&["b.rs", "b/inner.rs"])), "{cycles:?}");
    assert_eq!(files::one_way_round(&graph, &set(&["b.rs", "b/inner.rs"])), "b.rs -> b/inner.rs -> b.rs");
}

/// The files of a source tree and the files each one's code names: `crate::`, `super::` and
/// `self::` paths anywhere, and `use` of a child module by its bare name, each resolved to the
/// file that defines the module it reaches (`mod.rs`, or `x.rs` beside `x/`, for a directory).
/// A path through a `pub use` is followed to the file that defines what it re-exports, and the
/// re-export itself is no edge: it is the module's face, not a dependency of its file.
/// Comments, literals and `#[cfg(test)]` items (inline test modules and test-only files) are
/// left out.
mod files {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// A module path from the crate root (`[]` is `lib.rs`).
    type Module = Vec<String>;

    pub(crate) struct Tree {
        /// Each module and its file, relative to the root (`worker/shim.rs`).
        files: BTreeMap<Module, String>,
        /// Each module's code: comments, literals and test-only items gone.
        code: BTreeMap<Module, String>,
    }

    /// Every `.rs` file under `root` (`main.rs`, the binary, aside) by its module path, the
    /// modules declared under `#[cfg(test)]` and everything below them left out.
    pub(crate) fn read(root: &Path) -> Tree {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    found.push(p);
                }
            }
        }
        let mut files = BTreeMap::new();
        let mut raw = BTreeMap::new();
        for p in found {
            let rel = p.strip_prefix(root).expect("under root").to_string_lossy().to_string();
            if rel == "main.rs" {
                continue;
            }
            let module = module_of(&rel);
            raw.insert(module.clone(), std::fs::read_to_string(&p).expect("read"));
            files.insert(module, rel);
        }
        // Test-only modules: declared as `#[cfg(test)] mod x;` in their parent's file.
        let mut test_only = BTreeSet::new();
        for (m, text) in &raw {
            for name in cfg_test_children(&strip_comments_and_literals(text)) {
                let mut child = m.clone();
                child.push(name);
                test_only.insert(child);
            }
        }
        files.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
        let code = files.keys().map(|m| (m.clone(), strip_cfg_test(&strip_comments_and_literals(&raw[m])))).collect();
        Tree { files, code }
    }

    fn module_of(rel: &str) -> Module {
        let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
            parts.pop();
        }
        parts
    }

    /// The code with every comment removed and every string and char literal emptied, so that
    /// neither a doc comment's `crate::x` nor a brace in a string is read as code.
    pub(crate) fn strip_comments_and_literals(text: &str) -> String {
        let b: Vec<char> = text.chars().collect();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            let next = b.get(i + 1).copied();
            if c == '/' && next == Some('/') {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && next == Some('*') {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            } else if c == 'r'
                && (next == Some('"') || next == Some('#'))
                && !b.get(i.wrapping_sub(1)).is_some_and(|p| p.is_alphanumeric() || *p == '_')
            {
                // A raw string: r"…", r#"…"#, …
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&'"') {
                    out.push(c);
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            } else if c == '"' {
                i += 1;
                while i < b.len() && b[i] != '"' {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            } else if c == '\'' {
                // A char literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), left as it is.
                if next == Some('\\') {
                    let mut j = i + 2;
                    while j < b.len() && b[j] != '\'' {
                        j += 1;
                    }
                    out.push_str("' '");
                    i = j + 1;
                } else if b.get(i + 2) == Some(&'\'') {
                    out.push_str("' '");
                    i += 3;
                } else {
                    out.push(c);
                    i += 1;
                }
            } else {
                out.push(c);
                i += 1;
            }
        }
        out
    }

    /// The names of the modules `code` declares as `#[cfg(test)] mod x;`.
    fn cfg_test_children(code: &str) -> Vec<String> {
        let mut names = Vec::new();
        for (i, _) in code.match_indices("#[cfg(test)]") {
            let rest = skip_attributes(&code[i + "#[cfg(test)]".len()..]);
            let rest = rest.strip_prefix("pub(crate) ").or_else(|| rest.strip_prefix("pub ")).unwrap_or(rest);
            if let Some(decl) = rest.strip_prefix("mod ") {
                let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if decl[name.len()..].trim_start().starts_with(';') {
                    names.push(name);
                }
            }
        }
        names
    }

    fn skip_attributes(mut rest: &str) -> &str {
        loop {
            rest = rest.trim_start();
            if !rest.starts_with("#[") {
                return rest;
            }
            rest = rest.split_once(']').map_or("", |(_, r)| r);
        }
    }

    /// The code without its `#[cfg(test)]` items: each one up to its `;` or its matching `}`.
    fn strip_cfg_test(code: &str) -> String {
        let mut out = String::new();
        let mut rest = code;
        while let Some(i) = rest.find("#[cfg(test)]") {
            out.push_str(&rest[..i]);
            let item = skip_attributes(&rest[i + "#[cfg(test)]".len()..]);
            let mut depth = 0usize;
            let mut end = item.len();
            for (j, c) in item.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = j + 1;
                            break;
                        }
                    }
                    ';' if depth == 0 => {
                        end = j + 1;
                        break;
                    }
                    _ => {}
                }
            }
            rest = &item[end..];
        }
        out.push_str(rest);
        out
    }

    /// One path a `use` names (its tree flattened), the name it binds, and whether it is public.
    #[derive(Debug, Clone)]
    struct UsePath {
        segments: Vec<String>,
        binds: Option<String>,
        public: bool,
    }

    fn ident_at(s: &str) -> &str {
        let n = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        &s[..n]
    }

    /// Every `use` item of `code`, flattened (`a::{b, c::d as e}` is `a::b` and `a::c::d`), and
    /// the code with those items blanked out.
    fn use_items(code: &str) -> (Vec<UsePath>, String) {
        let mut paths = Vec::new();
        let mut rest_code = String::new();
        let mut rest = code;
        while let Some(i) = find_word(rest, "use") {
            let before = rest[..i].trim_end();
            let public =
                before.ends_with("pub") || before.ends_with(')') && before.rsplit_once("pub").is_some_and(|(_, r)| r.starts_with('('));
            let end = rest[i..].find(';').map_or(rest.len(), |e| i + e);
            rest_code.push_str(&rest[..i]);
            let tree: String = rest[i + 3..end].chars().filter(|c| !c.is_whitespace() || *c == ' ').collect();
            flatten(tree.trim(), &mut Vec::new(), public, &mut paths);
            rest = &rest[(end + 1).min(rest.len())..];
        }
        rest_code.push_str(rest);
        (paths, rest_code)
    }

    /// The first occurrence of `word` in `s` as a whole word followed by a space.
    fn find_word(s: &str, word: &str) -> Option<usize> {
        let mut from = 0;
        while let Some(i) = s[from..].find(word).map(|i| i + from) {
            let before_ok = s[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let after_ok = s[i + word.len()..].starts_with(char::is_whitespace);
            if before_ok && after_ok {
                return Some(i);
            }
            from = i + word.len();
        }
        None
    }

    fn flatten(tree: &str, prefix: &mut Vec<String>, public: bool, out: &mut Vec<UsePath>) {
        let tree = tree.trim().trim_start_matches("::");
        if let Some(group) = tree.strip_prefix('{') {
            let inner = group.strip_suffix('}').unwrap_or(group);
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        flatten(&inner[start..j], &mut prefix.clone(), public, out);
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            flatten(&inner[start..], &mut prefix.clone(), public, out);
            return;
        }
        let seg = ident_at(tree);
        if seg.is_empty() {
            if tree.starts_with('*') && !prefix.is_empty() {
                out.push(UsePath { segments: prefix.clone(), binds: None, public });
            }
            return;
        }
        let after = tree[seg.len()..].trim_start();
        if let Some(more) = after.strip_prefix("::") {
            prefix.push(seg.to_string());
            flatten(more, prefix, public, out);
        } else {
            let binds = after.strip_prefix("as ").map(|a| ident_at(a.trim()).to_string()).unwrap_or_else(|| seg.to_string());
            if seg != "self" {
                prefix.push(seg.to_string());
            }
            out.push(UsePath { segments: prefix.clone(), binds: Some(binds).filter(|b| b != "_"), public });
        }
    }

    /// Every `crate::…`, `super::…` and `self::…` path outside `use` items.
    fn expression_paths(code: &str) -> Vec<Vec<String>> {
        let mut paths = Vec::new();
        for start in ["crate::", "super::", "self::"] {
            for (i, _) in code.match_indices(start) {
                if code[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut segments = Vec::new();
                let mut rest = &code[i..];
                loop {
                    let seg = ident_at(rest);
                    if seg.is_empty() {
                        break;
                    }
                    segments.push(seg.to_string());
                    match rest[seg.len()..].strip_prefix("::") {
                        Some(r) => rest = r,
                        None => break,
                    }
                }
                paths.push(segments);
            }
        }
        paths
    }

    impl Tree {
        /// The module a path names from `module`'s code and the name it goes on to, if any;
        /// `None` for a path outside the crate.
        fn locate(&self, module: &Module, segments: &[String]) -> Option<(Module, Option<String>)> {
            let (first, rest) = segments.split_first()?;
            let mut at = match first.as_str() {
                "crate" => Vec::new(),
                "self" => module.clone(),
                "super" => module[..module.len().checked_sub(1)?].to_vec(),
                child => {
                    let mut m = module.clone();
                    m.push(child.to_string());
                    if !self.files.contains_key(&m) {
                        return None;
                    }
                    m
                }
            };
            for (k, seg) in rest.iter().enumerate() {
                if seg == "super" {
                    at.pop();
                    continue;
                }
                let mut next = at.clone();
                next.push(seg.clone());
                if self.files.contains_key(&next) {
                    at = next;
                } else {
                    return Some((at, Some(seg.clone()))).filter(|_| k < rest.len());
                }
            }
            Some((at, None))
        }

        /// The file that defines what a path names, following re-exports (a few deep).
        fn resolve(&self, module: &Module, segments: &[String], hops: usize) -> Option<Module> {
            let (at, item) = self.locate(module, segments)?;
            if let (Some(item), Some(code), true) = (item, self.code.get(&at), hops < 8) {
                let (uses, _) = use_items(code);
                if let Some(u) = uses.iter().find(|u| u.public && u.binds.as_deref() == Some(item.as_str())) {
                    return self.resolve(&at, &u.segments, hops + 1).or(Some(at));
                }
            }
            self.files.contains_key(&at).then_some(at)
        }

        /// Each file and the files its code names.
        pub(crate) fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
            let mut graph = BTreeMap::new();
            for (module, file) in &self.files {
                let (uses, rest) = use_items(&self.code[module]);
                let named = uses.iter().filter(|u| !u.public).map(|u| u.segments.clone()).chain(expression_paths(&rest));
                let targets: BTreeSet<String> =
                    named.filter_map(|s| self.resolve(module, &s, 0)).map(|m| self.files[&m].clone()).filter(|f| f != file).collect();
                graph.insert(file.clone(), targets);
            }
            graph
        }
    }

    /// The cycles of a graph: its strongly connected components of more than one file (Tarjan).
    pub(crate) fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
        struct State<'a> {
            graph: &'a BTreeMap<String, BTreeSet<String>>,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<BTreeSet<String>>,
        }
        fn connect<'a>(v: &'a str, s: &mut State<'a>) {
            let i = s.index.len();
            s.index.insert(v, i);
            s.low.insert(v, i);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    connect(w, s);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    s.found.push(component);
                }
            }
        }
        let mut s =
            State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), found: Vec::new() };
        for v in graph.keys() {
            if !s.index.contains_key(v.as_str()) {
                connect(v, &mut s);
            }
        }
        s.found
    }

    /// One way round a cycle, to name in a failure: `a.rs -> b.rs -> a.rs`.
    pub(crate) fn one_way_round(graph: &BTreeMap<String, BTreeSet<String>>, cycle: &BTreeSet<String>) -> String {
        let start = cycle.iter().next().expect("a cycle has files");
        // Breadth-first from the start back to it, inside the cycle.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.as_str()]);
        while let Some(v) = queue.pop_front() {
            for w in graph[v].iter().filter(|w| cycle.contains(*w)) {
                if w == start {
                    let mut path = vec![start.as_str(), v];
                    let mut at = v;
                    while let Some(p) = came_from.get(at) {
                        path.push(p);
                        at = p;
                    }
                    path.reverse();
                    return path.join(" -> ");
                }
                if !came_from.contains_key(w.as_str()) {
                    came_from.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        cycle.iter().cloned().collect::<Vec<_>>().join(", ")
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

/// docs/hacking.md's "Code layout" names every directory (`name/`) and every file (`name.rs`,
/// `mod.rs` aside) under `src/`: the map matches the tree.
#[test]
fn the_code_layout_in_hacking_md_names_every_file_of_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/hacking.md")).expect("docs/hacking.md");
    let start = doc.find("## Code layout").expect("a Code layout section");
    let layout = &doc[start..];
    let layout = &layout[..layout[3..].find("\n## ").map_or(layout.len(), |i| i + 3)];
    let mut missing = Vec::new();
    let mut seen = 0;
    let mut dirs = vec![root.join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("src dir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = e.path().strip_prefix(root).expect("under the root").display().to_string();
            seen += 1;
            if e.path().is_dir() {
                if !layout.contains(&format!("{name}/")) {
                    missing.push(format!("{rel}/"));
                }
                dirs.push(e.path());
            } else if name.ends_with(".rs") && name != "mod.rs" && !layout.contains(&name) {
                missing.push(rel);
            }
        }
    }
    assert!(seen > 100, "the tree was read ({seen} entries)");
    assert!(missing.is_empty(), "docs/hacking.md's Code layout does not name: {missing:?}");
}
