//! Worker packages as people install them: the packages bundled in the binary, listed with
//! whether each is installed here (`workers --available`), and one written out into the
//! project's `.lore/workers/` or the home's `workers/` (`workers add`), never over one.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::config::{Home, Project};
use crate::worker::bundled::{self, InstallError};
use crate::worker::{project_workers_dir, Catalog, Source};

/// Where `workers add` writes a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The project's `.lore/workers/<name>/` (committed with the project).
    Project,
    /// The home's `workers/<name>/` (every project of this home).
    Home,
}

/// A package `workers add` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub name: String,
    pub dir: PathBuf,
    pub files: Vec<String>,
}

/// Write the bundled package `name` into the project's workers dir (or, with
/// [`Target::Home`], the home's). Refused, with nothing written, when the name is not bundled
/// or its directory exists. `project` is needed only for [`Target::Project`].
pub fn add(home: &Home, project: Option<&Project>, name: &str, target: Target) -> Result<Added> {
    let package = bundled::find(name)?;
    let dir = match (target, project) {
        (Target::Home, _) => home.workers_dir(),
        (Target::Project, Some(p)) => {
            // Never written through a link (`.lore/workers` or `.lore` pointing elsewhere).
            let dir = project_workers_dir(&p.root);
            crate::artifact::make_lore_dir(&dir)?;
            dir
        }
        (Target::Project, None) => {
            anyhow::bail!("no project to add {name:?} to: run it inside a git repository, or add it to the home's workers/")
        }
    }
    .join(package.name());
    package.write_to(&dir).map_err(|e: InstallError| anyhow::anyhow!(e))?;
    Ok(Added { name: package.name().to_string(), dir, files: package.files.iter().map(|f| f.name.to_string()).collect() })
}

/// A bundled package, and where a package of its name is installed here (if one is).
#[derive(Debug, Clone, Serialize)]
pub struct Available {
    pub name: String,
    pub description: String,
    pub capabilities: Vec<String>,
    /// `project` or `home`: where the package of this name that runs here was found.
    pub installed: Option<Source>,
    pub installed_at: Option<PathBuf>,
}

/// The bundled packages, each marked with the installed package of the same name that work
/// for it would run (the project's wins over the home's); `project` may be absent (outside a
/// repository: only the home is looked at).
pub fn available(home: &Home, project: Option<&Project>) -> Vec<Available> {
    let catalog = match project {
        Some(p) => Catalog::discover(&p.root, &home.workers_dir()),
        None => Catalog::discover_home(&home.workers_dir()),
    };
    bundled::PACKAGES
        .iter()
        .map(|b| {
            let m = b.manifest();
            let here = catalog.packages.get(b.name());
            Available {
                name: b.name().to_string(),
                description: m.description,
                capabilities: m.capabilities,
                installed: here.map(|p| p.source),
                installed_at: here.map(|p| p.dir.clone()),
            }
        })
        .collect()
}
