//! Identifiers and relative paths that come from files or arguments: validated here before
//! anything uses them to build a filesystem path or a git ref name.

use std::path::{Component, Path};

/// Why an id or a relative path was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdError {
    #[error("invalid id {0:?}: use letters, digits, '-', '_' and '.', not starting or ending with '.', without '..', not ending in '.lock' (at most 100 characters)")]
    Id(String),
    #[error("invalid path {0:?}: must be relative, inside the project, without '..'")]
    Path(String),
}

/// Check a commission/meeting/worker id (an artifact's file stem). Letters of either case:
/// Guild Hall names its artifacts so (`commission-Dalton-20260321-155859`); two ids that differ
/// only in case are refused where artifacts are listed ([`case_clashes`]), and an id is taken
/// by one of another case ([`crate::activity::ids`]), so their branches and state dirs never
/// meet on a filesystem that folds case.
pub fn validate_id(id: &str) -> Result<(), IdError> {
    // Ids name branches too (`claude/commission/<id>`): what `git check-ref-format` refuses in
    // a ref component (`..`, a trailing `.` or `.lock`) is refused here, so that no id is
    // accepted that could never be dispatched.
    let ok = !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && !id.ends_with('.')
        && !id.ends_with(".lock")
        && !id.contains("..")
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(IdError::Id(id.to_string()))
    }
}

/// The groups of ids among `ids` that differ only in case (`Dalton-1`, `dalton-1`), each
/// group in the order given: on a filesystem that folds case their files, branches and state
/// dirs would be one, so none of them is acted on.
pub(crate) fn case_clashes<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<Vec<&'a str>> {
    let mut by_folded: std::collections::BTreeMap<String, Vec<&'a str>> = std::collections::BTreeMap::new();
    for id in ids {
        by_folded.entry(id.to_ascii_lowercase()).or_default().push(id);
    }
    by_folded.into_values().filter(|g| g.len() > 1).collect()
}

/// Why an artifact's `worker:` is not a package name ([`worker_name`]).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum WorkerNameError {
    #[error("bad worker name {name:?}: {why}")]
    Invalid { name: String, why: IdError },
    #[error("worker must be a package name")]
    NotText,
    /// `role` says what the worker is for.
    #[error("missing required key `worker:` ({role})")]
    Missing { role: String },
}

/// The `worker:` key of an artifact: a package name, or why it is not one (`role` says what
/// the worker is for, in the message for a missing key).
pub(crate) fn worker_name(value: Option<&serde_yaml_ng::Value>, role: &str) -> Result<String, WorkerNameError> {
    match value {
        Some(serde_yaml_ng::Value::String(w)) => match validate_id(w) {
            Ok(()) => Ok(w.clone()),
            // A Guild Hall worker's identity name (`Dalton`, `Guild Master`).
            Err(_) if valid_identity(w) && w.chars().any(|c| c.is_ascii_uppercase() || c == ' ') => Ok(w.clone()),
            Err(why) => Err(WorkerNameError::Invalid { name: w.clone(), why }),
        },
        Some(_) => Err(WorkerNameError::NotText),
        None => Err(WorkerNameError::Missing { role: role.to_string() }),
    }
}

/// A Guild Hall worker's identity name: what `worker:` may say besides a package's name (the
/// roster maps it). Exact, spaces allowed, no control characters, no leading or trailing blank.
pub(crate) fn valid_identity(name: &str) -> bool {
    !name.is_empty() && name.len() <= 100 && name.trim() == name && !name.chars().any(|c| c.is_control() || c == '/' || c == '\\')
}

/// An id made from another id and a suffix (`<base>-<suffix>`: a follow-up, a fix-forward):
/// the base shortened as needed so that the result is a valid id.
pub(crate) fn derived(base: &str, suffix: &str) -> String {
    let room = 100usize.saturating_sub(suffix.len() + 1);
    let mut b: String = base.chars().take(room).collect();
    while b.ends_with(['.', '-']) {
        b.pop();
    }
    let id = format!("{b}-{suffix}");
    if validate_id(&id).is_ok() {
        id
    } else {
        suffix.to_string()
    }
}

/// Check a project-relative path (a dependency or an artifact): no root, no `..`, not empty.
/// Returns it normalised to '/'-separated form without `./` components.
pub(crate) fn validate_rel_path(path: &str) -> Result<String, IdError> {
    let bad = || IdError::Path(path.to_string());
    if path.is_empty() || path.contains('\0') {
        return Err(bad());
    }
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str().ok_or_else(bad)?),
            Component::CurDir => {}
            _ => return Err(bad()),
        }
    }
    if parts.is_empty() {
        return Err(bad());
    }
    Ok(parts.join("/"))
}

/// Turn a title into an id: its letters transliterated to ASCII (`Émigré café` →
/// `emigre-cafe`), lowercase words joined by '-', at most 60 characters; `commission` when no
/// letter or digit is left.
pub(crate) fn slugify(title: &str) -> String {
    slugify_or(title, "commission")
}

/// [`slugify`], with `fallback` when the title leaves no letter or digit (a title in another
/// script): each kind names its own (`plan`, `meeting-<time>`).
pub(crate) fn slugify_or(title: &str, fallback: &str) -> String {
    // A letter and its accent written apart (NFD: `e` + U+0301, as macOS file names and some
    // editors give them) is the letter: combining diacritical marks are dropped.
    let ascii: String = title
        .chars()
        .filter(|c| !('\u{0300}'..='\u{036F}').contains(c))
        .map(|c| latin_to_ascii(c).map(String::from).unwrap_or_else(|| c.to_string()))
        .collect();
    let slug = words(&ascii);
    if slug.is_empty() {
        fallback.to_string()
    } else {
        slug
    }
}

/// [`slugify`] without the transliteration: only ASCII letters and digits are kept. A
/// project's default name is built with it, so the name (and with it the home's state and
/// worktree directories) of a project that exists stays what it was.
pub(crate) fn ascii_slug(text: &str) -> String {
    let slug = words(text);
    if slug.is_empty() {
        "commission".to_string()
    } else {
        slug
    }
}

/// The ASCII letters and digits of `text`, lowercase, runs of anything else one '-', at most
/// 60 characters; empty when there are none.
fn words(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 60 {
            break;
        }
    }
    slug.trim_matches('-').to_string()
}

/// The ASCII letters a Latin letter with a diacritic (or a Latin ligature) is written with:
/// Latin-1 and Latin Extended-A/B, the letters of titles people write. A table of our own,
/// not a crate: `deunicode` covers every script with ~200 KB of tables, for slugs only.
fn latin_to_ascii(c: char) -> Option<&'static str> {
    const TABLE: &[(&str, &str)] = &[
        ("a", "ÀÁÂÃÄÅàáâãäåĀāĂăĄąǍǎǞǟǠǡǺǻȀȁȂȃȦȧ"),
        ("ae", "ÆæǢǣǼǽ"),
        ("c", "ÇçĆćĈĉĊċČč"),
        ("d", "ÐðĎďĐđ"),
        ("dz", "ǄǅǆǱǲǳ"),
        ("e", "ÈÉÊËèéêëĒēĔĕĖėĘęĚěȄȅȆȇȨȩ"),
        ("g", "ĜĝĞğĠġĢģǦǧǴǵ"),
        ("h", "ĤĥĦħȞȟ"),
        ("i", "ÌÍÎÏìíîïĨĩĪīĬĭĮįİıǏǐȈȉȊȋ"),
        ("ij", "Ĳĳ"),
        ("j", "Ĵĵǰ"),
        ("k", "ĶķĸǨǩ"),
        ("l", "ĹĺĻļĽľĿŀŁł"),
        ("lj", "Ǉǈǉ"),
        ("n", "ÑñŃńŅņŇňŉǸǹ"),
        ("ng", "Ŋŋ"),
        ("nj", "Ǌǋǌ"),
        ("o", "ÒÓÔÕÖØòóôõöøŌōŎŏŐőƠơǑǒǪǫǬǭȌȍȎȏȪȫȬȭȮȯȰȱǾǿ"),
        ("oe", "Œœ"),
        ("r", "ŔŕŖŗŘřȐȑȒȓ"),
        ("s", "ŚśŜŝŞşŠšſȘș"),
        ("ss", "ß"),
        ("t", "ŢţŤťŦŧȚț"),
        ("th", "Þþ"),
        ("u", "ÙÚÛÜùúûüŨũŪūŬŭŮůŰűŲųƯưǓǔǕǖǗǘǙǚǛǜȔȕȖȗ"),
        ("w", "Ŵŵ"),
        ("y", "ÝýÿŶŷŸȲȳ"),
        ("z", "ŹźŻżŽž"),
    ];
    if c.is_ascii() {
        return None;
    }
    TABLE.iter().find(|(_, from)| from.contains(c)).map(|(to, _)| *to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Letters with diacritics are transliterated, not dropped (`migr-caf`); what
    /// has no Latin transliteration is a separator, as before.
    #[test]
    fn slugs_transliterate_latin_letters() {
        assert_eq!(slugify("Émigré café"), "emigre-cafe");
        assert_eq!(slugify("E\u{301}migre\u{301} cafe\u{301}"), "emigre-cafe");
        assert_eq!(slugify("Straße über Æsir, Łódź"), "strasse-uber-aesir-lodz");
        assert_eq!(slugify("Fix the bug"), "fix-the-bug");
        assert_eq!(slugify("日本 docs"), "docs");
        assert_eq!(slugify("日本"), "commission");
        assert_eq!(slugify_or("日本", "plan"), "plan");
        assert_eq!(ascii_slug("café"), "caf");
    }

    #[test]
    fn ids() {
        for good in ["a", "survey-crash_recovery.2", "x1", "A", "commission-Dalton-20260321-155859"] {
            assert_eq!(validate_id(good), Ok(()), "{good}");
        }
        for bad in ["", "../x", ".hidden", "a/b", "a b", "Guild Master", "é", &"x".repeat(101)] {
            assert!(validate_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ids_that_differ_only_in_case_are_grouped() {
        let ids = ["commission-Dalton-1", "b", "commission-dalton-1", "B", "c"];
        assert_eq!(case_clashes(ids), vec![vec!["b", "B"], vec!["commission-Dalton-1", "commission-dalton-1"]]);
        assert!(case_clashes(["a", "b"]).is_empty());
    }

    #[test]
    fn ids_that_are_not_branch_names_are_refused() {
        for bad in ["a..b", "x.lock", "x.", "job.lock"] {
            assert!(validate_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rel_paths() {
        assert_eq!(validate_rel_path("./.lore/a.md").as_deref(), Ok(".lore/a.md"));
        for bad in ["", "/etc/passwd", "../x", "a/../../b", "."] {
            assert!(validate_rel_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slugs() {
        assert_eq!(slugify("Survey crash-recovery designs!"), "survey-crash-recovery-designs");
        assert_eq!(slugify("!!!"), "commission");
        assert!(validate_id(&slugify("Ünïcode Title 42")).is_ok());
    }
}
