//! Markdown artifacts under `.lore/`: split frontmatter from body, parse and validate it into
//! typed commissions, meetings and plans (each kind's keys and status vocabulary declared
//! once), compose a new one's text (each kind's `render`), create it ([`create_new`]) and load
//! one by id ([`load`]) the one way each, and write the reconciler's keys back surgically.
//! Decides nothing.

pub(crate) mod commission;
pub(crate) mod cron;
pub(crate) mod dialect;
pub(crate) mod frontmatter;
pub mod ids;
pub(crate) mod keys;
pub(crate) mod locate;
pub(crate) mod meeting;
pub mod plan;
pub(crate) mod schedule;
pub(crate) mod schema;
pub(crate) mod store;
pub(crate) mod value_schemas;
pub(crate) mod vocabulary;
pub mod write;

pub use commission::{Commission, Desired, Feedback, Status};
pub use frontmatter::Problem;
pub use meeting::{Meeting, MeetingStatus};

/// Why an artifact could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// A symlink where an artifact should be: never followed, never replaced.
    #[error("symlink: artifacts must be regular files (a link is never followed or replaced)")]
    Symlink,
    #[error("not a regular file")]
    NotRegular,
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
}

/// Read an artifact's text without ever following a symlink: the file is opened with
/// `O_NOFOLLOW` (no window between a check and the open), and must be a regular file.
pub(crate) fn read_regular(path: &std::path::Path) -> Result<String, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    read_opened(std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path))
}

/// [`read_regular`] of the entry `name` of the open directory `dir`: the kernel resolves one
/// name instead of the whole path, which is what a pass over thousands of artifacts spends its
/// time on. `name` must be a plain file name (no `/`).
pub(crate) fn read_regular_in(dir: &std::fs::File, name: &std::ffi::OsStr) -> Result<String, ReadError> {
    use std::os::fd::{AsFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    if name.as_bytes().contains(&b'/') {
        return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")));
    }
    let name = std::ffi::CString::new(name.as_bytes()).map_err(|e| ReadError::Io(e.into()))?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: a valid directory descriptor (borrowed for the call) and a NUL-terminated name;
    // the descriptor returned is new and owned by the `File` made from it.
    let fd = unsafe { libc::openat(std::os::fd::AsRawFd::as_raw_fd(&dir.as_fd()), name.as_ptr(), flags) };
    let file = if fd < 0 { Err(std::io::Error::last_os_error()) } else { Ok(unsafe { std::fs::File::from_raw_fd(fd) }) };
    read_opened(file)
}

/// [`read_regular`] of `rel` (relative, without `..`) beneath the directory `dir`: no link is
/// followed in `rel`, at any depth (`dir` itself is opened as given). For a file of a package:
/// its directory may be a link a person made, but what lies in it came with the package.
pub(crate) fn read_regular_beneath(dir: &std::path::Path, rel: &std::path::Path) -> Result<String, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(n) => parts.push(n),
            std::path::Component::CurDir => {}
            _ => return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a relative path beneath"))),
        }
    }
    let Some((name, dirs)) = parts.split_last() else {
        return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty path")));
    };
    let mut at = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(dir)?;
    for d in dirs {
        at = open_dir_in(&at, d)?;
    }
    read_regular_in(&at, name)
}

/// The directory `name` of the open directory `dir`, never through a link.
fn open_dir_in(dir: &std::fs::File, name: &std::ffi::OsStr) -> Result<std::fs::File, ReadError> {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(name.as_bytes()).map_err(|e| ReadError::Io(e.into()))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid directory descriptor (borrowed for the call) and a NUL-terminated name;
    // the descriptor returned is new and owned by the `File` made from it.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::ELOOP) { ReadError::Symlink } else { e.into() });
    }
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

fn read_opened(file: std::io::Result<std::fs::File>) -> Result<String, ReadError> {
    use std::io::Read;
    let file = match file {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(ReadError::Symlink),
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    // Sized from the one `fstat` above: `File::read_to_string` would `fstat` and `lseek` again
    // for its own size hint, per artifact, on every pass.
    // Reserved fallibly: a sparse file claiming a terabyte is an error to report, not an abort.
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(meta.len()).unwrap_or(usize::MAX).saturating_add(1))
        .map_err(|e| ReadError::Io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, format!("{} bytes: {e}", meta.len()))))?;
    (&file).take(u64::MAX).read_to_end(&mut bytes)?;
    String::from_utf8(bytes)
        .map_err(|_| ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8")))
}

/// Why an artifact could not be loaded by its id.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error(transparent)]
    BadId(#[from] ids::IdError),
    /// Not there, or not readable; a symlink, or not a regular file (never followed): the
    /// whole text as the kind's [`Wording`] says it (the io error in it, not a source after it),
    /// and the io error's kind, if it was one (a face tells a missing file from a fault by it).
    #[error("{text}")]
    Unreadable { text: String, io: Option<std::io::ErrorKind> },
    /// The problems the parser found, one a line, each naming the file.
    #[error("{0}")]
    Invalid(String),
}

/// How one kind says its artifact could not be read: the texts each kind's commands always
/// printed, kept as data so that one [`load`] serves them all.
pub struct Wording {
    what: &'static str,
    /// `no commission "c" (… not readable): cannot read: …`: the id quoted, "not readable"
    /// after the path; `no plan p (…): …`: the io error without [`ReadError`]'s "cannot read".
    quoted: bool,
    not_readable: bool,
    bare_io: bool,
    /// The kind's own name for a symlink (else [`ReadError::Symlink`]'s).
    symlink: Option<&'static str>,
    /// A file that is not there is said as [`Wording::missing`] (`no commission "c" in …`), as
    /// every command taking the kind's id says it.
    missing_in_dir: bool,
}

impl Wording {
    pub const COMMISSION: Wording =
        Wording { what: "commission", quoted: true, not_readable: true, bare_io: false, symlink: None, missing_in_dir: true };
    pub(crate) const MEETING: Wording =
        Wording { what: "meeting", quoted: false, not_readable: false, bare_io: false, symlink: None, missing_in_dir: false };
    pub(crate) const PLAN: Wording = Wording {
        what: "plan",
        quoted: false,
        not_readable: false,
        bare_io: true,
        symlink: Some("symlink: plan artifacts must be regular files"),
        missing_in_dir: false,
    };

    /// The problem a pass or `check` reports for an artifact it could not read.
    pub(crate) fn problem(&self, e: &ReadError) -> String {
        match (e, self.symlink) {
            (ReadError::Symlink, Some(s)) => format!("{s} (a link is never followed or replaced)"),
            _ => e.to_string(),
        }
    }

    /// What every command taking an id of the kind says when there is no artifact `id` in
    /// `dir` (`no commission "nope" in …/.lore/commissions`).
    pub fn missing(&self, id: &str, dir: &std::path::Path) -> String {
        let id = if self.quoted { format!("{id:?}") } else { id.to_string() };
        format!("no {} {id} in {}", self.what, dir.display())
    }

    /// What a command says when artifact `id` at `path` could not be read.
    fn unreadable(&self, id: &str, path: &std::path::Path, e: &ReadError) -> String {
        if let (true, ReadError::Io(io), Some(dir)) = (self.missing_in_dir, e, path.parent()) {
            if io.kind() == std::io::ErrorKind::NotFound {
                return self.missing(id, dir);
            }
        }
        let path = path.display();
        match e {
            ReadError::Io(io) => {
                let id = if self.quoted { format!("{id:?}") } else { id.to_string() };
                let after = if self.not_readable { " not readable" } else { "" };
                let why = if self.bare_io { io.to_string() } else { e.to_string() };
                format!("no {} {id} ({path}{after}): {why}", self.what)
            }
            ReadError::Symlink => format!("{path}: {}", self.symlink.map(str::to_string).unwrap_or_else(|| e.to_string())),
            ReadError::NotRegular => format!("{path}: {e}"),
        }
    }
}

/// Load the artifact `id` at `path` (its place, from the id) as every reader does: the id
/// validated, the file read without following a link ([`read_regular`]), then parsed by
/// `parse`; what went wrong said in the kind's `wording`.
pub(crate) fn load<T>(
    path: &std::path::Path,
    id: &str,
    wording: &Wording,
    parse: impl FnOnce(&std::path::Path, &str) -> Result<T, Vec<Problem>>,
) -> Result<T, LoadError> {
    ids::validate_id(id)?;
    let text = read_regular(path).map_err(|e| LoadError::Unreadable {
        text: wording.unreadable(id, path, &e),
        io: match &e {
            ReadError::Io(io) => Some(io.kind()),
            ReadError::Symlink | ReadError::NotRegular => None,
        },
    })?;
    parse(path, &text).map_err(|ps| LoadError::Invalid(ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// Why a new artifact was not written. (The io errors are part of the text, not a source
/// after it: anyhow's `{:#}` would print them twice.)
#[derive(Debug, thiserror::Error)]
pub(crate) enum CreateError {
    /// The text would be refused by the parser every pass and `check` use.
    #[error("the {what} would not be valid, nothing written: {problems}")]
    Invalid { what: &'static str, problems: String },
    /// `error`: what the system said (`File exists`), for a caller that words it its own way.
    #[error("{path} already exists: choose another id")]
    Exists { path: String, error: std::io::Error },
    #[error("creating {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// Write a new artifact (`what`: "commission", "meeting", "plan") at `path`, never over a
/// file that is there, and only if `parse` — the parser every pass and `check` use — accepts
/// `text`: a file that would be invalid the moment it exists (text over the frontmatter's
/// size limit, say) is never written. What `parse` made of it.
///
/// It appears whole or not at all, even to a process killed while writing it (callers take a
/// file that exists as written before): the text goes to a temp file beside it, synced, then
/// hard-linked into place (`link(2)` fails if anything is there, a link included, and never
/// follows one); the temp is removed either way (a kill leaves a hidden `.*.tmp` no reader
/// takes for an artifact).
pub(crate) fn create_new<T>(
    path: &std::path::Path,
    text: &str,
    what: &'static str,
    parse: impl FnOnce(&std::path::Path, &str) -> Result<T, Vec<Problem>>,
) -> Result<T, CreateError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let parsed = parse(path, text)
        .map_err(|ps| CreateError::Invalid { what, problems: ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; ") })?;
    let shown = || path.display().to_string();
    let io = |error| CreateError::Io { path: shown(), error };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact");
    // 0666 less the umask, as a file a person creates (tempfile's default is 0600).
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.guild-hall-"))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| io(without_temp_name(e)))?;
    tmp.write_all(text.as_bytes()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => Ok(parsed),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Err(CreateError::Exists { path: shown(), error }),
        // A filesystem without hard links (vfat, exfat, some FUSE and CIFS mounts): created
        // exclusively in place, as before, and synced; a kill mid-write can leave it partial there.
        Err(error) if matches!(error.raw_os_error(), Some(libc::EPERM | libc::ENOTSUP | libc::EINVAL | libc::EXDEV)) => {
            let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(f) => f,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(CreateError::Exists { path: shown(), error })
                }
                Err(error) => return Err(io(error)),
            };
            f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(io)?;
            Ok(parsed)
        }
        Err(error) => Err(io(error)),
    }
    // `tmp` is removed when dropped, whichever way this went.
}

/// An error of tempfile's as the system gave it: tempfile appends its random temp name
/// (`… at path "…"`), which would make the message differ every time; the caller names the
/// artifact's own path instead.
fn without_temp_name(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error().is_some() {
        return e;
    }
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((plain, _)) => std::io::Error::new(e.kind(), plain.to_string()),
        None => e,
    }
}

/// Whether `path` itself is a symlink (not followed).
pub(crate) fn is_symlink(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Why `.lore` or its control-plane dir `dir` cannot be used: `dir`, or `.lore` holding it, is
/// a symlink. A link there could lead outside the repository: artifacts there would be run and
/// rewritten, packages written through it. Never followed; the error names the link.
pub(crate) fn refuse_lore_link(dir: &std::path::Path) -> anyhow::Result<()> {
    let lore = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == ".lore"));
    for d in lore.into_iter().chain([dir]) {
        if is_symlink(d) {
            anyhow::bail!("{}", lore_link_problem(d));
        }
    }
    Ok(())
}

/// Make the control-plane dir `dir` (and `.lore`) if missing, never through a link.
pub(crate) fn make_lore_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    refuse_lore_link(dir)?;
    std::fs::create_dir_all(dir)?;
    // Made by someone else meanwhile, as a link: still refused.
    refuse_lore_link(dir)
}

/// What is said of a symlink at `.lore` or one of its dirs.
pub(crate) fn lore_link_problem(link: &std::path::Path) -> String {
    format!(
        "{} is a symlink: guild-hall never reads or writes .lore through a link (it could lead outside the repository); make it a directory",
        link.display()
    )
}

/// The artifacts in `dir` (`*.md`, not hidden), sorted; none if it is missing. Regular files,
/// and symlinks too, so that every reader reports them (as refused) instead of missing them.
/// `dir`, or `.lore` above it, a symlink: an error naming it ([`refuse_lore_link`]).
pub fn paths(dir: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    refuse_lore_link(dir)?;
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    // The entry's type comes with the directory listing (no `stat` per file), and names in one
    // directory sort as bytes: the same order as comparing whole paths, without splitting
    // 10,000 paths into components.
    let mut names: Vec<std::ffi::OsString> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            // A name that is not UTF-8 is no artifact's (ids are ASCII): left out, as before.
            let name = e.file_name();
            let Some(name) = name.to_str() else { return false };
            name.ends_with(".md") && !name.starts_with('.') && e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink())
        })
        .map(|e| e.file_name())
        .collect();
    names.sort_unstable();
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

/// `paths` (one kind's artifacts, [`paths`]) without those whose ids differ only in case from
/// another's, and a problem for each of those naming every file of its group: on a filesystem
/// that folds case they would be one file, one branch, one state dir, so none is acted on (the
/// rest go on).
pub(crate) fn without_case_clashes(paths: Vec<std::path::PathBuf>) -> (Vec<std::path::PathBuf>, Vec<Problem>) {
    let stem = |p: &std::path::Path| p.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
    let stems: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    let clashes = ids::case_clashes(stems.iter().map(String::as_str));
    if clashes.is_empty() {
        return (paths, Vec::new());
    }
    let mut problems = Vec::new();
    let mut kept = Vec::with_capacity(paths.len());
    for (path, id) in paths.iter().zip(&stems) {
        match clashes.iter().find(|g| g.contains(&id.as_str())) {
            None => kept.push(path.clone()),
            Some(group) => {
                let files: Vec<String> =
                    group.iter().filter_map(|g| paths.iter().find(|p| stem(p) == *g)).map(|p| p.display().to_string()).collect();
                let msg = format!(
                    "ids that differ only in case: {} (on a filesystem that folds case they are one file, one branch, one state dir): rename all but one; none of them is acted on",
                    files.join(", ")
                );
                problems.push(Problem::new(path, 1, 1, msg));
            }
        }
    }
    (kept, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_read_by_path_or_by_name_in_its_directory_alike() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.md"), "---\nstatus: completed\n---\nbody\n").expect("write");
        std::os::unix::fs::symlink(dir.path().join("a.md"), dir.path().join("link.md")).expect("symlink");
        std::fs::create_dir(dir.path().join("sub.md")).expect("dir");
        std::fs::write(dir.path().join("bad.md"), b"---\n\xff\n---\n").expect("write");
        let open = std::fs::File::open(dir.path()).expect("open dir");
        let by_name = |n: &str| read_regular_in(&open, std::ffi::OsStr::new(n));
        assert_eq!(by_name("a.md").expect("read"), "---\nstatus: completed\n---\nbody\n");
        assert_eq!(read_regular(&dir.path().join("a.md")).expect("read"), by_name("a.md").expect("read"));
        assert!(matches!(by_name("link.md"), Err(ReadError::Symlink)));
        assert!(matches!(read_regular(&dir.path().join("link.md")), Err(ReadError::Symlink)));
        assert!(matches!(by_name("sub.md"), Err(ReadError::NotRegular)));
        assert!(matches!(by_name("bad.md"), Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData));
        assert!(matches!(by_name("missing.md"), Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound));
        assert!(matches!(by_name("../a.md"), Err(ReadError::Io(_))), "a name with a slash is refused");
        // The listing: regular files and symlinks, `*.md`, not hidden, sorted as bytes.
        std::fs::write(dir.path().join("B.md"), "x").expect("write");
        std::fs::write(dir.path().join(".hidden.md"), "x").expect("write");
        let names: Vec<String> = paths(dir.path())
            .expect("paths")
            .iter()
            .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
            .collect();
        assert_eq!(names, ["B.md", "a.md", "bad.md", "link.md"]);
    }

    #[test]
    fn ids_that_differ_only_in_case_are_all_refused_by_name() {
        let paths: Vec<std::path::PathBuf> = ["d/C-1.md", "d/a.md", "d/c-1.md"].iter().map(std::path::PathBuf::from).collect();
        let (kept, problems) = without_case_clashes(paths);
        assert_eq!(kept, [std::path::PathBuf::from("d/a.md")]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        for p in &problems {
            assert!(p.message.contains("d/C-1.md, d/c-1.md") && p.message.contains("differ only in case"), "{p}");
        }
    }

    fn accept(_: &std::path::Path, text: &str) -> Result<String, Vec<Problem>> {
        Ok(text.to_string())
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut n: Vec<String> =
            std::fs::read_dir(dir).expect("dir").filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        n.sort();
        n
    }

    /// Written whole, with a person's mode; a file (or a link) already there is never
    /// replaced nor followed; no temp file is left either way.
    #[test]
    fn a_failed_create_names_the_artifact_never_a_temp() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("missing/a.md");
        let e = create_new(&path, "---\nx: 1\n---\n", "commission", accept).expect_err("no dir");
        let text = e.to_string();
        assert!(text.contains(&path.display().to_string()) && text.contains("(os error 2)"), "{text}");
        assert!(!text.contains(".guild-hall-"), "a random temp name in the message: {text}");
    }

    #[test]
    fn create_new_appears_whole_never_over_a_file_and_leaves_no_temp() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("a.md");
        assert_eq!(create_new(&path, "---\nx: 1\n---\n", "commission", accept).expect("created"), "---\nx: 1\n---\n");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "---\nx: 1\n---\n");
        assert_ne!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o077, 0, "not a private temp's mode");

        let e = create_new(&path, "theirs", "commission", accept).expect_err("exists");
        assert!(matches!(e, CreateError::Exists { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "---\nx: 1\n---\n", "never replaced");

        let target = dir.path().join("target");
        std::fs::write(&target, "kept").expect("write");
        std::os::unix::fs::symlink(&target, dir.path().join("l.md")).expect("link");
        assert!(matches!(create_new(&dir.path().join("l.md"), "x", "commission", accept), Err(CreateError::Exists { .. })));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "kept", "a link is never followed");

        let refused = create_new(&dir.path().join("b.md"), "x", "commission", |_, _| {
            Err::<(), _>(vec![Problem::new(std::path::Path::new("b.md"), 1, 1, "no".to_string())])
        });
        assert!(matches!(refused, Err(CreateError::Invalid { .. })));
        assert_eq!(names(dir.path()), ["a.md", "l.md", "target"], "no temp left, nothing invalid written");
        // Its io errors are said once (they are not also a source anyhow would print again).
        let e = create_new(&dir.path().join("none/c.md"), "x", "commission", accept).expect_err("no dir");
        let said = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(said.matches("No such file or directory").count(), 1, "{said}");
    }
}
