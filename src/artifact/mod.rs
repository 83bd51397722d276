//! Markdown artifacts under `.lore/`: split frontmatter from body, parse and validate it into
//! typed commissions, meetings and plans (their status vocabularies declared once), create a
//! new one ([`create_new`]) and load one by id ([`load`]) the one way each, and write the
//! reconciler's keys back surgically. Decides nothing.

pub mod commission;
pub mod frontmatter;
pub mod ids;
pub mod meeting;
pub mod plan;
pub mod schema;
pub mod store;
pub mod vocabulary;
pub mod write;

pub use commission::{Commission, Desired, Status};
pub use frontmatter::Problem;
pub use meeting::{Meeting, MeetingStatus};

/// Why an artifact could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
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
pub fn read_regular(path: &std::path::Path) -> Result<String, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(ReadError::Symlink),
        Err(e) => return Err(e.into()),
    };
    if !file.metadata()?.is_file() {
        return Err(ReadError::NotRegular);
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

/// Why an artifact could not be loaded by its id.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    BadId(#[from] ids::IdError),
    /// Not there, or not readable.
    #[error("no {what} {id} ({path}): {source}")]
    Missing { what: &'static str, id: String, path: String, source: std::io::Error },
    /// A symlink, or not a regular file: never followed.
    #[error("{path}: {why}")]
    Refused { path: String, why: ReadError },
    /// The problems the parser found, one a line, each naming the file.
    #[error("{0}")]
    Invalid(String),
}

/// Load the artifact `id` (`what`: "commission", "meeting", "plan") at `path` (its place, from
/// the id) as every reader does: the id validated, the file read without following a link
/// ([`read_regular`]), then parsed by `parse`.
pub fn load<T>(
    path: &std::path::Path,
    id: &str,
    what: &'static str,
    parse: impl FnOnce(&std::path::Path, &str) -> Result<T, Vec<Problem>>,
) -> Result<T, LoadError> {
    ids::validate_id(id)?;
    let text = match read_regular(path) {
        Ok(t) => t,
        Err(ReadError::Io(source)) => {
            return Err(LoadError::Missing { what, id: id.to_string(), path: path.display().to_string(), source })
        }
        Err(why) => return Err(LoadError::Refused { path: path.display().to_string(), why }),
    };
    parse(path, &text).map_err(|ps| LoadError::Invalid(ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")))
}

/// Why a new artifact was not written.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The text would be refused by the parser every pass and `check` use.
    #[error("the {what} would not be valid, nothing written: {problems}")]
    Invalid { what: &'static str, problems: String },
    #[error("{0} already exists: choose another id")]
    Exists(String),
    #[error("creating {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// Write a new artifact (`what`: "commission", "meeting") at `path`, never over a file that
/// is there, and only if `parse` — the parser every pass and `check` use — accepts `text`: a
/// file that would be invalid the moment it exists (text over the frontmatter's size limit,
/// say) is never written. What `parse` made of it.
pub fn create_new<T>(
    path: &std::path::Path,
    text: &str,
    what: &'static str,
    parse: impl FnOnce(&std::path::Path, &str) -> Result<T, Vec<Problem>>,
) -> Result<T, CreateError> {
    use std::io::Write;
    let parsed = parse(path, text)
        .map_err(|ps| CreateError::Invalid { what, problems: ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; ") })?;
    let shown = || path.display().to_string();
    let mut f = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(CreateError::Exists(shown())),
        Err(source) => return Err(CreateError::Io { path: shown(), source }),
    };
    if let Err(source) = f.write_all(text.as_bytes()) {
        // A part of it (a full disk) is not left behind as an artifact.
        let _ = std::fs::remove_file(path);
        return Err(CreateError::Io { path: shown(), source });
    }
    Ok(parsed)
}

/// Whether `path` itself is a symlink (not followed).
pub fn is_symlink(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The artifacts in `dir` (`*.md`, not hidden), sorted; none if it is missing. Regular files,
/// and symlinks too, so that every reader reports them (as refused) instead of missing them.
pub fn paths(dir: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".md") && !name.starts_with('.') && (p.is_file() || is_symlink(p))
        })
        .collect();
    paths.sort();
    Ok(paths)
}
