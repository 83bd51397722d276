//! The control plane — the files that decide what guild-hall runs and how (commissions,
//! meetings, plans, worker packages, the project's settings) — defined once, and the paths git
//! refuses to hold. No worker of any kind changes either: not by a merge, a copy-back or a tool.

/// The control plane, relative to the project root: directories end with `/`.
pub(crate) const CONTROL_PLANE: [&str; 5] =
    [".lore/commissions/", ".lore/meetings/", ".lore/plans/", ".lore/workers/", ".lore/guild-hall.yaml"];

/// Whether `path` (relative, `/`-separated) is in the control plane, or is a directory above
/// it (`.lore` itself: replaced by a link or a file, it would move the whole control plane).
/// ASCII case is ignored: on a case-insensitive checkout `.Lore/Workers/x` is `.lore/workers/x`.
pub(crate) fn is_control_plane(path: &str) -> bool {
    let p = path.trim_start_matches("./").trim_end_matches('/').to_ascii_lowercase();
    !p.is_empty()
        && CONTROL_PLANE.iter().any(|c| {
            let dir = c.trim_end_matches('/');
            p == dir || p.starts_with(&format!("{dir}/")) || dir.starts_with(&format!("{p}/"))
        })
}

#[cfg(test)]
/// The control-plane paths among `paths`, sorted and without repeats.
pub(crate) fn control_plane_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = paths.into_iter().filter(|p| is_control_plane(p)).map(str::to_string).collect();
    out.sort();
    out.dedup();
    out
}

/// Why git would refuse `name` as one component of a path in a tree (as `git fsck` and
/// `read-tree` do), if it would: empty, `.`, `..`, a `/` or NUL inside, or `.git` in any case
/// (with the trailing dots and spaces, or the `git~1` short name, that some filesystems drop).
pub(crate) fn bad_component(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        return Some("an empty name");
    }
    if name == b"." || name == b".." {
        return Some("a `.` or `..` component");
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Some("a `/` or NUL inside a name");
    }
    let trimmed = {
        let mut n = name;
        while let [rest @ .., b'.' | b' '] = n {
            n = rest;
        }
        n
    };
    if trimmed.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(b"git~1") {
        return Some("a `.git` component");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_plane_and_what_is_above_it() {
        for p in [
            ".lore/commissions/a.md",
            ".lore/meetings/m.md",
            ".lore/plans/p.md",
            ".lore/workers/pwn/worker.yaml",
            ".lore/workers",
            ".lore/guild-hall.yaml",
            ".lore",
            ".LORE/Workers/pwn/worker.yaml",
            "./.lore/commissions/x.md",
        ] {
            assert!(is_control_plane(p), "{p}");
        }
        for p in [
            ".lore/research/a.md",
            ".lore/reports/x.md",
            "src/lib.rs",
            ".lore/guild-hall.yaml.bak",
            ".lorex/workers/a",
            "",
            "lore/workers/a",
        ] {
            assert!(!is_control_plane(p), "{p}");
        }
        assert_eq!(control_plane_paths([".lore/workers/a", "src/x", ".lore/workers/a"]), vec![".lore/workers/a".to_string()]);
    }

    #[test]
    fn names_git_refuses() {
        for n in [&b".git"[..], b".GIT", b".Git. ", b"git~1", b"", b".", b"..", b"a/b", b"a\0b"] {
            assert!(bad_component(n).is_some(), "{:?}", String::from_utf8_lossy(n));
        }
        for n in [&b".gitignore"[..], b"git", b".github", b"x.git", b"..."] {
            assert!(bad_component(n).is_none(), "{:?}", String::from_utf8_lossy(n));
        }
    }
}
