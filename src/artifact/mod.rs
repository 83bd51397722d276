//! Markdown artifacts under `.lore/`: split frontmatter from body, parse and validate it into
//! typed commissions, and write the reconciler's keys back surgically. Decides nothing.

pub mod commission;
pub mod frontmatter;
pub mod ids;
pub mod meeting;
pub mod plan;
pub mod write;

pub use commission::{Commission, Desired, Status};
pub use frontmatter::Problem;
pub use meeting::{Meeting, MeetingStatus};

/// The artifacts in `dir` (`*.md`, not hidden, regular files), sorted; none if it is missing.
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
            name.ends_with(".md") && !name.starts_with('.') && p.is_file()
        })
        .collect();
    paths.sort();
    Ok(paths)
}
