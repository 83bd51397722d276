//! Guild Hall's roster: worker packages as Guild Hall writes them (a directory with a
//! `package.json` whose `guildHall.type` is `worker`, a `soul.md` and a `posture.md`), found
//! under the `guild_hall_packages:` directories, named by their identity (`Dalton`, `Guild
//! Master`), each run through an agent package; and `worker_aliases:`, a name for any package.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::package::{project_workers_dir, Catalog, Checkout, GuildHallWorker, Package, Source};
use crate::artifact::Problem;

/// The agent package Guild Hall workers run through when neither config names one.
pub(crate) const DEFAULT_AGENT: &str = "claude-code";

/// Guild Hall's built-in tool that guild-hall does not give a worker: its skills come from
/// Guild Hall's plugins, which do not carry over.
const TOOLS_NOT_CARRIED: [&str; 1] = ["Skill"];

/// The roster's settings: the project's `.lore/guild-hall.yaml`, then the home's `config.yaml`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// Each directory as written, and where it is.
    pub(crate) dirs: Vec<(String, PathBuf)>,
    pub(crate) agent: Option<String>,
    pub(crate) aliases: BTreeMap<String, String>,
    /// What is wrong with an entry (a path that leaves the project, say), at its config file.
    pub(crate) problems: Vec<Problem>,
}

impl Settings {
    /// Read from the project at `project_root` (if any) and the home at `home_root`. A config
    /// that cannot be read gives nothing here: opening the project or loading the home says why.
    pub(crate) fn read(project_root: Option<&Path>, home_root: &Path) -> Settings {
        let mut out = Settings::default();
        if let Some(root) = project_root {
            if let Ok(cfg) = crate::config::ProjectConfig::load(root) {
                let file = root.join(crate::config::ProjectConfig::PATH);
                for entry in &cfg.guild_hall_packages {
                    match crate::artifact::ids::validate_rel_path(entry) {
                        Ok(rel) => out.dirs.push((entry.clone(), root.join(rel))),
                        Err(e) => out.problems.push(Problem::new(
                            &file,
                            1,
                            1,
                            format!("guild_hall_packages: {e}: a project's entry is a path inside the project (the home's config.yaml names others)"),
                        )),
                    }
                }
                out.agent = cfg.agent.clone();
                out.aliases = cfg.worker_aliases.clone();
            }
        }
        let home = crate::config::Home { root: home_root.to_path_buf() };
        if let Ok(global) = home.load_config() {
            for entry in &global.guild_hall_packages {
                match super::expand_home("guild_hall_packages", entry) {
                    Ok(dir) => out.dirs.push((entry.clone(), dir)),
                    Err(e) => out.problems.push(Problem::new(&home.config_path(), 1, 1, e.to_string())),
                }
            }
            out.agent = out.agent.or(global.agent);
            for (name, target) in global.worker_aliases {
                out.aliases.entry(name).or_insert(target);
            }
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.aliases.is_empty() && self.problems.is_empty()
    }
}

/// Why a `package.json` is not a Guild Hall worker guild-hall can run: each names the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum PackageJsonError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("guildHall.identity.name: a worker package names itself (a non-empty string without line breaks)")]
    NoIdentity,
    #[error("guildHall.{field}: {expected}")]
    BadField { field: &'static str, expected: &'static str },
}

/// What a `package.json` is: a Guild Hall worker, or something else (a toolbox, a plugin, a
/// plain package), which the roster passes over.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    Worker(Box<GuildHallWorker>),
    NotAWorker,
}

/// Parse the `package.json` of the package in `dir` (found under `found_under`), to be run
/// through `agent`.
pub(crate) fn parse(text: &str, dir: &Path, found_under: &str, agent: &str) -> Result<Parsed, PackageJsonError> {
    let v: Value = serde_json::from_str(text).map_err(|e| PackageJsonError::NotJson(e.to_string()))?;
    let Some(gh) = v.get("guildHall") else { return Ok(Parsed::NotAWorker) };
    if gh.get("type").and_then(Value::as_str) != Some("worker") {
        return Ok(Parsed::NotAWorker);
    }
    let identity =
        gh.get("identity").and_then(|i| i.get("name")).and_then(Value::as_str).filter(|n| crate::artifact::ids::valid_identity(n));
    let identity = identity.ok_or(PackageJsonError::NoIdentity)?.to_string();
    let text_field = |field: &'static str, at: Option<&Value>| -> Result<Option<String>, PackageJsonError> {
        match at {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PackageJsonError::BadField { field, expected: "a string" }),
        }
    };
    let display_title = text_field("identity.displayTitle", gh.get("identity").and_then(|i| i.get("displayTitle")))?;
    let model = text_field("model", gh.get("model"))?;
    if model.as_deref().is_some_and(|m| m.is_empty() || m.chars().any(|c| c.is_whitespace() || c.is_control())) {
        return Err(PackageJsonError::BadField { field: "model", expected: "a model's name, one word (`opus`, `sonnet`)" });
    }
    let tools = match gh.get("builtInTools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for t in items {
                match t.as_str() {
                    Some(t) if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                        if !TOOLS_NOT_CARRIED.contains(&t) {
                            out.push(t.to_string())
                        }
                    }
                    _ => {
                        return Err(PackageJsonError::BadField {
                            field: "builtInTools",
                            expected: "a list of tool names (`Read`, `Grep`, `Bash`, ...)",
                        })
                    }
                }
            }
            out
        }
        Some(_) => return Err(PackageJsonError::BadField { field: "builtInTools", expected: "a list of tool names" }),
    };
    let checkout = match gh.get("checkoutScope").map(|v| v.as_str()) {
        None => Checkout::Full,
        Some(Some("full")) => Checkout::Full,
        Some(Some("sparse")) => Checkout::Sparse,
        Some(_) => return Err(PackageJsonError::BadField { field: "checkoutScope", expected: "`full` or `sparse`" }),
    };
    Ok(Parsed::Worker(Box::new(GuildHallWorker {
        identity,
        display_title,
        dir: dir.to_path_buf(),
        found_under: found_under.to_string(),
        model,
        tools,
        checkout,
        agent: agent.to_string(),
    })))
}

/// Where in `text` (a `package.json`) a field's key is: its line and column, else the start.
fn field_position(text: &str, field: &str) -> (usize, usize) {
    let key = field.rsplit('.').next().unwrap_or(field);
    let needle = format!("\"{key}\"");
    text.lines().enumerate().find_map(|(i, l)| l.find(&needle).map(|c| (i + 1, c + 1))).unwrap_or((1, 1))
}

impl Catalog {
    pub fn discover(project_root: &Path, home_workers: &Path) -> Catalog {
        let mut cat = Catalog::default();
        cat.scan(&project_workers_dir(project_root), Source::Project);
        cat.scan(home_workers, Source::Home);
        cat.look_at_commands();
        // The roster's Guild Hall workers and aliases, from both configs (the home's is the
        // workers dir's parent).
        let home_root = home_workers.parent().unwrap_or(home_workers);
        let roster = Settings::read(Some(project_root), home_root);
        if !roster.is_empty() {
            cat.add_roster(&roster);
        }
        cat
    }

    /// The home's packages only (outside any project).
    pub(crate) fn discover_home(home_workers: &Path) -> Catalog {
        let mut cat = Catalog::default();
        cat.scan(home_workers, Source::Home);
        cat.look_at_commands();
        let roster = Settings::read(None, home_workers.parent().unwrap_or(home_workers));
        if !roster.is_empty() {
            cat.add_roster(&roster);
        }
        cat
    }

    /// Add the roster `settings` names to the catalog of worker.yaml packages: each Guild Hall
    /// worker under its identity name, run through the agent package; then each alias. A name
    /// two packages claim is refused (neither runs), said at both.
    pub(crate) fn add_roster(&mut self, settings: &Settings) {
        self.problems.extend(settings.problems.iter().cloned());
        let agent_name = settings.agent.clone().unwrap_or_else(|| DEFAULT_AGENT.to_string());
        let mut found: BTreeMap<String, Vec<GuildHallWorker>> = BTreeMap::new();
        for (entry, dir) in &settings.dirs {
            self.dirs.push(dir.clone());
            let Ok(read) = std::fs::read_dir(dir) else {
                let msg = format!("guild_hall_packages: {entry}: {} is not a readable directory", dir.display());
                self.problems.push(Problem::new(dir, 1, 1, msg));
                continue;
            };
            let mut subdirs: Vec<PathBuf> = read
                .filter_map(|e| e.ok())
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            subdirs.sort();
            for sub in subdirs {
                let file = sub.join("package.json");
                let text = match crate::artifact::read_regular(&file) {
                    Ok(t) => t,
                    Err(crate::artifact::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        self.problems.push(Problem::new(&file, 1, 1, e.to_string()));
                        continue;
                    }
                };
                match parse(&text, &sub, entry, &agent_name) {
                    Ok(Parsed::Worker(w)) => found.entry(w.identity.clone()).or_default().push(*w),
                    Ok(Parsed::NotAWorker) => {}
                    Err(e) => {
                        let (line, col) = match &e {
                            PackageJsonError::BadField { field, .. } => field_position(&text, field),
                            PackageJsonError::NoIdentity => field_position(&text, "identity"),
                            PackageJsonError::NotJson(_) => (1, 1),
                        };
                        // Known by its directory's name, so work naming it waits saying why.
                        let name = sub.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
                        self.broken.entry(name).or_insert_with(|| format!("{}: {e}", file.display()));
                        self.problems.push(Problem::new(&file, line, col, e.to_string()));
                    }
                }
            }
        }
        let agent = self.packages.get(&agent_name).cloned();
        for (name, mut claims) in found {
            if claims.len() > 1 || self.packages.contains_key(&name) {
                let mut whose: Vec<String> = claims.iter().map(|w| w.dir.join("package.json").display().to_string()).collect();
                if let Some(p) = self.packages.remove(&name) {
                    whose.push(p.dir.join("worker.yaml").display().to_string());
                }
                let why = format!(
                    "worker name {name:?} is ambiguous: {} all claim it; rename one (or map the name with worker_aliases:)",
                    whose.join(", ")
                );
                for w in &claims {
                    self.problems.push(Problem::new(&w.dir.join("package.json"), 1, 1, why.clone()));
                }
                self.broken.insert(name, why);
                continue;
            }
            let w = claims.pop().expect("one claim");
            match &agent {
                Some(agent) => {
                    let pkg = w.run_through(agent);
                    self.packages.insert(name, pkg);
                }
                None => {
                    let why = format!(
                        "worker {name:?} ({}) runs through the agent package {agent_name:?}, which is not installed: {}",
                        w.dir.join("package.json").display(),
                        super::package::install_hint(&agent_name)
                    );
                    self.broken.insert(name, why);
                }
            }
        }
        for (alias, target) in &settings.aliases {
            match self.packages.get(target).cloned() {
                Some(mut pkg) if pkg.alias_of.is_none() => {
                    pkg.alias_of = Some(target.clone());
                    pkg.source = Source::Alias;
                    self.broken.remove(alias);
                    self.packages.insert(alias.clone(), pkg);
                }
                Some(_) => {
                    let why = format!("worker_aliases: {alias} → {target}: {target:?} is an alias itself; name a package");
                    self.packages.remove(alias);
                    self.broken.insert(alias.clone(), why);
                }
                None => {
                    let why = match self.broken.get(target) {
                        Some(broken) => format!("worker_aliases: {alias} → {target}: {broken}"),
                        None => format!("worker_aliases: {alias} → {target}: no worker package {target:?} here"),
                    };
                    self.packages.remove(alias);
                    self.broken.insert(alias.clone(), why);
                }
            }
        }
    }
}

impl GuildHallWorker {
    /// The package that runs this worker: its agent's, with this worker's posture (read at
    /// launch), checkout, model and tools (`GUILD_HALL_MODEL`, `GUILD_HALL_TOOLS`: what an agent
    /// package's script passes its CLI). Its home, sandbox and memory stay the agent package's.
    fn run_through(self, agent: &Package) -> Package {
        let mut pkg = agent.clone();
        let m = &mut pkg.manifest;
        m.checkout = self.checkout;
        m.description = self.display_title.clone().unwrap_or_else(|| format!("Guild Hall worker {}", self.identity));
        if let Some(model) = &self.model {
            m.env.insert("GUILD_HALL_MODEL".into(), model.clone());
        }
        m.env.insert("GUILD_HALL_TOOLS".into(), self.tools.join(","));
        pkg.source = Source::GuildHall;
        pkg.guild_hall = Some(Arc::new(self));
        pkg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(text: &str) -> Result<Parsed, PackageJsonError> {
        parse(text, Path::new("/p/dev"), "packages", "claude-code")
    }

    /// Each identity's memory has a name of its own, a valid id whatever the identity.
    #[test]
    fn each_identity_has_a_memory_name_of_its_own() {
        let agent = Package::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workers/scribe")).expect("scribe");
        let key = |name: &str| {
            let text = format!(r#"{{"guildHall": {{"type": "worker", "identity": {{"name": {}}}}}}}"#, serde_json::json!(name));
            let Ok(Parsed::Worker(w)) = worker(&text) else { panic!("{name}: a worker") };
            w.run_through(&agent).memory_key()
        };
        assert_eq!(agent.memory_key(), "scribe");
        assert_eq!(key("Dalton"), "roster.Dalton");
        assert_eq!(key("Guild Master"), "roster.Guild_20Master");
        assert_eq!(key("Zoë.x"), "roster.Zo_c3_ab_2ex");
        let long = key(&"ü".repeat(50));
        assert!(long.len() <= 100 && crate::artifact::ids::validate_id(&long).is_ok(), "{long}");
        assert_ne!(long, key(&format!("{}a", "ü".repeat(49))), "the hash tells long names apart");
    }

    /// A worker package's fields read as Guild Hall means them; anything else passed over; a
    /// bad field said by name.
    #[test]
    fn package_json_fields() {
        let text = r#"{"name": "x", "guildHall": {"type": "worker", "identity": {"name": "Guild Master", "displayTitle": "Coordinator"},
            "model": "opus", "builtInTools": ["Skill", "Read", "Bash"], "checkoutScope": "sparse"}}"#;
        let Ok(Parsed::Worker(w)) = worker(text) else { panic!("a worker") };
        assert_eq!(w.identity, "Guild Master");
        assert_eq!(w.model.as_deref(), Some("opus"));
        assert_eq!(w.tools, ["Read", "Bash"], "Skill does not carry over");
        assert_eq!(w.checkout, Checkout::Sparse);
        assert_eq!(worker(r#"{"guildHall": {"type": "toolbox", "name": "t"}}"#), Ok(Parsed::NotAWorker));
        assert_eq!(worker(r#"{"name": "plain"}"#), Ok(Parsed::NotAWorker));
        assert_eq!(worker(r#"{"guildHall": {"type": "worker", "identity": {}}}"#), Err(PackageJsonError::NoIdentity));
        assert_eq!(worker(r#"{"guildHall": {"type": "worker", "identity": {"name": " Dalton"}}}"#), Err(PackageJsonError::NoIdentity));
        let e = worker(r#"{"guildHall": {"type": "worker", "identity": {"name": "D"}, "checkoutScope": "partial"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "guildHall.checkoutScope: `full` or `sparse`");
        let e = worker(r#"{"guildHall": {"type": "worker", "identity": {"name": "D"}, "builtInTools": "Read"}}"#).unwrap_err();
        assert!(e.to_string().starts_with("guildHall.builtInTools"), "{e}");
        assert!(matches!(worker("{"), Err(PackageJsonError::NotJson(_))));
        assert_eq!(field_position("{\n  \"guildHall\": {\n    \"checkoutScope\": 1", "checkoutScope"), (3, 5));
    }
}
