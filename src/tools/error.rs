//! What kind of failure an operation met — a refusal, something not there, a conflict with
//! another writer, or a fault — so that every face answers each as its own: the CLI's exit
//! code, the JSON-RPC error code, an MCP tool error or a protocol error.

/// The kind of an operation's failure, as every face tells it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request does not fit the state or the rules (a bad value, a job not yet completed,
    /// a project not set up): the caller can read why and ask otherwise.
    Refused,
    /// What the request names is not there (an unknown id, a missing file).
    NotFound,
    /// Another writer holds or changed what the request needs (the id is taken, a process is
    /// still at work on it): the same request may succeed later.
    Conflict,
    /// Not the request's fault: an I/O error, a git failure, a bug.
    Fault,
}

impl ErrorKind {
    #[cfg(test)]
    pub(crate) const ALL: [ErrorKind; 4] = [ErrorKind::Refused, ErrorKind::NotFound, ErrorKind::Conflict, ErrorKind::Fault];

    /// Its name on the wire (`error.data.kind` of a JSON-RPC error).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Fault => "fault",
        }
    }

    /// The CLI's exit code. A refusal keeps 1, the code every command documents for "no" (a
    /// check that found problems, a refused request); 2 is clap's for a bad command line;
    /// 70 is sysexits' EX_SOFTWARE.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Refused => 1,
            ErrorKind::NotFound => 3,
            ErrorKind::Conflict => 4,
            ErrorKind::Fault => 70,
        }
    }

    /// The kind an error says it is: that of a [`Failure`] in it (as its cause or as context),
    /// else what the first system error in its chain says (I/O, git, an artifact's read or
    /// create); `None` when nothing in it says (a plain message), for the caller's default.
    pub fn of(e: &anyhow::Error) -> Option<ErrorKind> {
        match e.downcast_ref::<Failure>() {
            Some(f) => Some(f.kind),
            None => e.chain().find_map(kind_of_cause),
        }
    }
}

/// The kind one cause in an error's chain says, if it says one.
fn kind_of_cause(cause: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    use crate::artifact::{CreateError, LoadError, ReadError};
    if let Some(f) = cause.downcast_ref::<Failure>() {
        return Some(f.kind);
    }
    // A catalogue's error, carried out of a face (`guild-hall job`).
    if let Some(e) = cause.downcast_ref::<super::ToolError>() {
        return Some(e.kind());
    }
    if let Some(e) = cause.downcast_ref::<std::io::Error>() {
        return Some(of_io(e));
    }
    if let Some(e) = cause.downcast_ref::<git2::Error>() {
        return Some(of_git(e));
    }
    if let Some(e) = cause.downcast_ref::<ReadError>() {
        return Some(match e {
            ReadError::Io(e) => of_io(e),
            // A link or a device where an artifact should be is never followed: refused.
            ReadError::Symlink | ReadError::NotRegular => ErrorKind::Refused,
        });
    }
    if cause.is::<crate::artifact::ids::IdError>() {
        return Some(ErrorKind::Refused);
    }
    if let Some(e) = cause.downcast_ref::<LoadError>() {
        return Some(match e {
            LoadError::Unreadable { io: Some(io), .. } => of_io(&std::io::Error::from(*io)),
            // A link or a device where the artifact should be; a bad id; a file that does not
            // parse: refused, saying why.
            LoadError::Unreadable { io: None, .. } | LoadError::BadId(_) | LoadError::Invalid(_) => ErrorKind::Refused,
        });
    }
    if let Some(e) = cause.downcast_ref::<CreateError>() {
        return Some(match e {
            CreateError::Invalid { .. } => ErrorKind::Refused,
            CreateError::Exists { .. } => ErrorKind::Conflict,
            CreateError::Io { error, .. } => of_io(error),
        });
    }
    None
}

/// An I/O error's kind: a missing file is not found, an existing one a conflict; a permission
/// denied (a sandbox's, a file's mode) and a link never followed (`O_NOFOLLOW`'s ELOOP) are
/// refusals; the rest a fault (EIO, a full disk, a directory where a file should be).
fn of_io(e: &std::io::Error) -> ErrorKind {
    match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::AlreadyExists => ErrorKind::Conflict,
        std::io::ErrorKind::PermissionDenied => ErrorKind::Refused,
        _ if e.raw_os_error() == Some(libc::ELOOP) => ErrorKind::Refused,
        _ => ErrorKind::Fault,
    }
}

/// A git error's kind, by its code.
fn of_git(e: &git2::Error) -> ErrorKind {
    use git2::ErrorCode as C;
    match e.code() {
        C::NotFound | C::UnbornBranch => ErrorKind::NotFound,
        C::Exists | C::Locked | C::Conflict | C::MergeConflict | C::Modified | C::Uncommitted | C::Unmerged | C::NotFastForward => {
            ErrorKind::Conflict
        }
        _ => ErrorKind::Fault,
    }
}

/// An operation's failure whose kind is known where it is raised: put in an `anyhow` chain
/// (`Err(Failure::not_found(…))?`), it is read back by [`ErrorKind::of`].
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    kind: ErrorKind,
    message: String,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure { kind, message: message.into() }
    }

    #[cfg(test)]
    pub(crate) fn refused(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::Refused, message)
    }

    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure::new(ErrorKind::NotFound, message)
    }

    pub(crate) fn kind(&self) -> ErrorKind {
        self.kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn each_kind_has_its_own_exit_code_and_name_and_none_is_success_or_usage() {
        let codes: std::collections::BTreeSet<u8> = ErrorKind::ALL.iter().map(|k| k.exit_code()).collect();
        let names: std::collections::BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!((codes.len(), names.len()), (4, 4));
        assert!(!codes.contains(&0) && !codes.contains(&2), "0 is success, 2 a bad command line: {codes:?}");
        assert_eq!(ErrorKind::Refused.exit_code(), 1, "a refusal exits 1, as documented");
    }

    #[test]
    fn a_failure_keeps_its_kind_under_context() {
        for kind in ErrorKind::ALL {
            let e = anyhow::Error::from(Failure::new(kind, "why")).context("doing it").context("the command");
            assert_eq!(ErrorKind::of(&e), Some(kind));
            assert_eq!(format!("{e:#}"), "the command: doing it: why");
        }
    }

    #[test]
    fn system_errors_say_their_kind_and_a_plain_message_says_none() {
        let io = |k: std::io::ErrorKind| anyhow::Error::from(std::io::Error::from(k)).context("reading x");
        let table = [
            (io(std::io::ErrorKind::NotFound), Some(ErrorKind::NotFound)),
            (io(std::io::ErrorKind::AlreadyExists), Some(ErrorKind::Conflict)),
            (anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EIO)), Some(ErrorKind::Fault)),
            (anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EISDIR)), Some(ErrorKind::Fault)),
            (anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC)), Some(ErrorKind::Fault)),
            (anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EACCES)), Some(ErrorKind::Refused)),
            (anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ELOOP)), Some(ErrorKind::Refused)),
            (
                anyhow::Error::from(git2::Error::new(git2::ErrorCode::NotFound, git2::ErrorClass::Reference, "no ref")),
                Some(ErrorKind::NotFound),
            ),
            (anyhow::Error::from(git2::Error::new(git2::ErrorCode::Locked, git2::ErrorClass::Index, "locked")), Some(ErrorKind::Conflict)),
            (anyhow::Error::from(git2::Error::from_str("corrupt object")), Some(ErrorKind::Fault)),
            (anyhow::Error::from(crate::artifact::ReadError::Symlink), Some(ErrorKind::Refused)),
            (anyhow::anyhow!("the title must not be empty"), None),
        ];
        for (e, kind) in table {
            assert_eq!(ErrorKind::of(&e), kind, "{e:#}");
        }
    }

    #[test]
    fn a_load_error_is_not_found_only_when_nothing_is_there() {
        let dir = tempfile::tempdir().expect("tempdir");
        let load = |name: &str| {
            let path = dir.path().join(name);
            let e = crate::artifact::load(&path, "x", &crate::artifact::Wording::COMMISSION, |_, _| Ok(())).expect_err("unreadable");
            ErrorKind::of(&anyhow::Error::from(e))
        };
        assert_eq!(load("gone.md"), Some(ErrorKind::NotFound));
        std::fs::create_dir(dir.path().join("dir.md")).expect("mkdir");
        assert_eq!(load("dir.md"), Some(ErrorKind::Refused), "there, but not a regular file");
        assert_eq!(
            ErrorKind::of(&anyhow::Error::from(
                crate::artifact::load(dir.path(), "../x", &crate::artifact::Wording::COMMISSION, |_, _| Ok(())).expect_err("bad id")
            )),
            Some(ErrorKind::Refused)
        );
    }

    #[test]
    fn a_failure_decides_over_the_io_error_under_it() {
        let e: anyhow::Error =
            Err::<(), _>(std::io::Error::from(std::io::ErrorKind::NotFound)).context(Failure::refused("not set up")).unwrap_err();
        assert_eq!(ErrorKind::of(&e), Some(ErrorKind::Refused));
    }
}
