//! The worker packages compiled into the binary (`guild-hall workers add NAME`): each one's
//! files as they are in the source tree (`build.rs` lists the directories and includes every
//! file, executable bits kept), and writing one out as a package directory, never over one.

use std::path::{Path, PathBuf};

/// One file of a bundled package.
#[derive(Debug)]
pub(crate) struct BundledFile {
    pub(crate) name: &'static str,
    pub(crate) bytes: &'static [u8],
    pub(crate) executable: bool,
}

/// A bundled package: the directory it was taken from and its files.
#[derive(Debug)]
pub(crate) struct BundledPackage {
    /// Where it lives in the source tree (relative to the crate root).
    pub(crate) dir: &'static str,
    pub(crate) files: &'static [BundledFile],
}

/// Every bundled package, in `build.rs`'s order.
pub(crate) static PACKAGES: &[BundledPackage] = include!(concat!(env!("OUT_DIR"), "/bundled_workers.rs"));

/// Why a bundled package could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("no bundled worker package {name:?}{}; bundled: {}", .suggestion.as_ref().map(|s| format!(" (did you mean {s:?}?)")).unwrap_or_default(), .available.join(", "))]
    Unknown { name: String, suggestion: Option<String>, available: Vec<String> },
    #[error("{} already exists: nothing written (it may hold edits of yours; remove or rename it to install the bundled {name:?} afresh)", .dir.display())]
    Exists { name: String, dir: PathBuf },
    #[error("writing {}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl BundledPackage {
    /// The package's name (its directory's, and its `worker.yaml`'s).
    pub(crate) fn name(&self) -> &'static str {
        self.dir.rsplit('/').next().unwrap_or(self.dir)
    }

    /// Write the package into `dir` (which must not exist), scripts executable. It appears
    /// whole or not at all: the files go into a hidden temp dir beside it (hidden dirs are not
    /// packages, so no pass can run a half-written one), which is then renamed to `dir`
    /// without replacing anything that appeared there meanwhile.
    pub(crate) fn write_to(&self, dir: &Path) -> Result<(), InstallError> {
        use std::os::unix::fs::PermissionsExt;
        let name = self.name().to_string();
        let exists = |dir: &Path| InstallError::Exists { name: name.clone(), dir: dir.to_path_buf() };
        if std::fs::symlink_metadata(dir).is_ok() {
            return Err(exists(dir));
        }
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| InstallError::Io { path, source }
        };
        let parent = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let tmp =
            tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".guild-hall-add.tmp").tempdir_in(parent).map_err(io(parent))?;
        for f in self.files {
            let path = tmp.path().join(f.name);
            std::fs::write(&path, f.bytes).map_err(io(&path))?;
            let mode = if f.executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(io(&path))?;
        }
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).map_err(io(tmp.path()))?;
        match nix::fcntl::renameat2(nix::fcntl::AT_FDCWD, tmp.path(), nix::fcntl::AT_FDCWD, dir, nix::fcntl::RenameFlags::RENAME_NOREPLACE)
        {
            Ok(()) => {
                // Renamed away: nothing left for the guard to remove.
                let _ = tmp.keep();
                Ok(())
            }
            Err(nix::errno::Errno::EEXIST) => Err(exists(dir)),
            Err(e) => Err(InstallError::Io { path: dir.to_path_buf(), source: e.into() }),
        }
    }
}

/// The bundled package called `name`.
pub(crate) fn find(name: &str) -> Result<&'static BundledPackage, InstallError> {
    PACKAGES.iter().find(|p| p.name() == name).ok_or_else(|| {
        let available: Vec<&str> = PACKAGES.iter().map(BundledPackage::name).collect();
        InstallError::Unknown {
            name: name.to_string(),
            suggestion: crate::artifact::keys::did_you_mean(name, &available).map(str::to_string),
            available: available.into_iter().map(str::to_string).collect(),
        }
    })
}

/// Whether a package called `name` is bundled (said in the reason of a commission that waits
/// for it).
pub(crate) fn is_bundled(name: &str) -> bool {
    PACKAGES.iter().any(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bundled package parses, is named as its directory, and holds every file of its
    /// directory byte for byte with the same executable bit (the source tree is the one source).
    #[test]
    fn bundled_packages_are_their_directories() {
        use std::os::unix::fs::PermissionsExt;
        assert!(PACKAGES.iter().any(|p| p.name() == "scribe"));
        for p in PACKAGES {
            assert_eq!(p.manifest().name, p.name(), "{}", p.dir);
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(p.dir);
            let mut on_disk: Vec<String> =
                std::fs::read_dir(&src).expect("dir").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
            on_disk.sort();
            let bundled: Vec<&str> = p.files.iter().map(|f| f.name).collect();
            assert_eq!(bundled, on_disk, "{}", p.dir);
            for f in p.files {
                let path = src.join(f.name);
                assert_eq!(std::fs::read(&path).expect("read"), f.bytes, "{}", path.display());
                let exec = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o111 != 0;
                assert_eq!(exec, f.executable, "{}", path.display());
            }
        }
        let names: std::collections::BTreeSet<&str> = PACKAGES.iter().map(BundledPackage::name).collect();
        assert_eq!(names.len(), PACKAGES.len(), "names are unique");
    }

    /// A file two packages carry the same is kept once in the source tree: every copy but one
    /// is a symlink to it (`build.rs` follows it), so that an edit reaches every package.
    #[test]
    fn a_file_several_packages_carry_is_kept_once() {
        let mut seen: std::collections::BTreeMap<&[u8], PathBuf> = std::collections::BTreeMap::new();
        for p in PACKAGES {
            for f in p.files {
                let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(p.dir).join(f.name);
                let linked = std::fs::symlink_metadata(&path).expect("meta").file_type().is_symlink();
                if linked || f.name == "worker.yaml" {
                    continue;
                }
                if let Some(first) = seen.insert(f.bytes, path.clone()) {
                    panic!("{} repeats {}: make one a symlink to the other", path.display(), first.display());
                }
            }
        }
    }

    #[test]
    fn an_unknown_name_lists_the_bundled_ones() {
        let e = find("scirbe").expect_err("unknown").to_string();
        assert!(e.contains("did you mean \"scribe\"") && e.contains("claude-code"), "{e}");
    }
}
