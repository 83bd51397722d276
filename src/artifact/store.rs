//! Replacing an artifact a person may be editing: the content hash that says "the file we
//! observed", the one atomic check-and-replace that never overwrites a save it did not see, and
//! the edits made with it (to the text observed, or to the text as it is now).

use std::hash::{Hash, Hasher};
use std::path::Path;

use anyhow::{anyhow, Context, Result};

use crate::files::{exchange, write_temp};

/// Hash of a file's text, as every artifact's `hash` is computed.
pub(crate) fn content_hash(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Replace a file a person may be editing, only if its content still hashes to `expect` (what
/// we observed). Returns false, writing nothing, if it changed. The check and the replace are
/// one atomic step: our version is swapped in (`renameat2(RENAME_EXCHANGE)`), and if what was
/// swapped out is not what we observed, someone saved in between and theirs is swapped back.
pub(crate) fn replace_if_unchanged(path: &Path, expect: u64, bytes: &[u8]) -> Result<bool> {
    // Never through a symlink: a person's link is neither followed nor replaced.
    let current = crate::artifact::read_regular(path).with_context(|| format!("reading {}", path.display()))?;
    if content_hash(&current) != expect {
        return Ok(false);
    }
    let tmp = write_temp(path, bytes)?;
    let cleanup = |r: Result<bool>| {
        let _ = std::fs::remove_file(&tmp);
        r
    };
    match exchange(&tmp, path) {
        Ok(()) => {
            // `tmp` now holds what was at `path` an instant ago.
            let swapped_out = std::fs::read(&tmp).unwrap_or_default();
            if crate::artifact::is_symlink(&tmp) {
                // A link was put there after we looked: it goes back, untouched.
                return cleanup(exchange(&tmp, path).map(|()| false).map_err(anyhow::Error::from));
            }
            if content_hash(&String::from_utf8_lossy(&swapped_out)) == expect {
                return cleanup(Ok(true));
            }
            // Someone saved after we looked. Give them their file back; if they save again
            // while we do, what comes out of the exchange is not what we put in, and that
            // newer save goes back in turn. Each exchange leaves the newest save in place.
            // `placed`: what we last put at `path`; `wanted`: the newest save, now at `tmp`.
            let (mut placed, mut wanted) = (bytes.to_vec(), swapped_out);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while std::time::Instant::now() < deadline {
                if let Err(e) = exchange(&tmp, path) {
                    return cleanup(Err(anyhow::Error::from(e).context(format!("restoring {} after a concurrent save", path.display()))));
                }
                let out = std::fs::read(&tmp).unwrap_or_default();
                if out == placed {
                    return cleanup(Ok(false));
                }
                (placed, wanted) = (wanted, out);
            }
            cleanup(Err(anyhow!("{} kept changing while it was being restored; the newest save is in place", path.display())))
        }
        // No RENAME_EXCHANGE here (filesystem or platform): check again and rename.
        Err(_) => {
            let again = crate::artifact::read_regular(path).unwrap_or_default();
            if content_hash(&again) != expect {
                return cleanup(Ok(false));
            }
            std::fs::rename(&tmp, path).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                anyhow::Error::from(e).context(format!("writing {}", path.display()))
            })?;
            Ok(true)
        }
    }
}

/// Replace the artifact at `path` with `edit` of its text if it is still the one observed
/// (`expect`): its new hash, or `None` when a person's save came in between (nothing written;
/// they win).
pub(crate) fn edit_if_unchanged(path: &Path, expect: u64, edit: impl FnOnce(&str) -> Result<String>) -> Result<Option<u64>> {
    let text = crate::artifact::read_regular(path).with_context(|| format!("reading {}", path.display()))?;
    if content_hash(&text) != expect {
        return Ok(None);
    }
    let new = edit(&text)?;
    if new != text && !replace_if_unchanged(path, expect, new.as_bytes())? {
        return Ok(None);
    }
    Ok(Some(content_hash(&new)))
}

/// `edit` made to the artifact as it is now, again when a save races us: for writes that must
/// land (a turn's session id, a status a person asked for), never over a person's newer save.
pub(crate) fn edit_current(path: &Path, edit: impl Fn(&str) -> Result<String>) -> Result<()> {
    for _ in 0..20 {
        let text = crate::artifact::read_regular(path).with_context(|| format!("reading {}", path.display()))?;
        if edit_if_unchanged(path, content_hash(&text), &edit)?.is_some() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    Err(anyhow!("{} kept changing; not written", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_what_was_observed() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.md");
        std::fs::write(&path, "seen\n").expect("write");
        assert!(replace_if_unchanged(&path, content_hash("seen\n"), b"ours\n").expect("replace"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "ours\n");
        // A save we did not observe is never overwritten.
        std::fs::write(&path, "theirs\n").expect("write");
        assert!(!replace_if_unchanged(&path, content_hash("ours\n"), b"mine again\n").expect("replace"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "theirs\n");
        // No temp files are left behind.
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    }

    #[test]
    fn a_symlink_is_never_followed_or_replaced() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("elsewhere.md");
        std::fs::write(&target, "theirs\n").expect("write");
        let link = dir.path().join("a.md");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = replace_if_unchanged(&link, content_hash("theirs\n"), b"ours\n").expect_err("refused");
        assert!(format!("{err:#}").contains("symlink"), "{err:#}");
        assert!(std::fs::symlink_metadata(&link).expect("link").file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "theirs\n");
    }

    #[test]
    fn racing_rename_saves_always_survive() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.md");
        std::fs::write(&path, "person 0\n").expect("write");
        let p = path.clone();
        let person = std::thread::spawn(move || {
            for i in 1..=300 {
                let tmp = p.with_file_name(format!(".a.md.{i}.swp"));
                std::fs::write(&tmp, format!("person {i}\n")).expect("write");
                std::fs::rename(&tmp, &p).expect("rename");
            }
        });
        // We only ever replace a person's version with "ours after N" for the N we observed.
        let mut ours = 0;
        while !person.is_finished() {
            let seen = std::fs::read_to_string(&path).expect("read");
            let n: u32 = seen.trim().rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            if seen.starts_with("person")
                && replace_if_unchanged(&path, content_hash(&seen), format!("ours after {n}\n").as_bytes()).expect("replace")
            {
                ours += 1;
            }
        }
        person.join().expect("person");
        // The person's last save came after everything we observed: it must be there, unless we
        // replaced exactly it (and then we say so).
        let last = std::fs::read_to_string(&path).expect("read");
        assert!(last == "person 300\n" || last == "ours after 300\n", "{last} (we wrote {ours} times)");
    }
}
