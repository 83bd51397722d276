//! The meeting artifact (`.lore/meetings/<id>.md`): its four statuses, its keys declared once
//! (the schema and what the parser validates, with `file:line:col` problems), the keys
//! guild-hall owns typed ([`Owned`]), and a new one's text (`render`). Pure: no I/O.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use super::frontmatter::{key_position, owned_text, read_mapping, Problem};
use super::ids;
use super::store::content_hash;

super::vocabulary::vocabulary! {
    /// The meeting state machine's states (REQ-MTG-4).
    pub enum MeetingStatus ("meeting status") {
        Requested = "requested",
        Open = "open",
        Closed = "closed",
        Declined = "declined",
    }
}

impl MeetingStatus {
    /// Nothing more happens to a meeting in this state.
    pub(crate) fn is_final(self) -> bool {
        matches!(self, MeetingStatus::Closed | MeetingStatus::Declined)
    }
}

// The one declaration of a meeting's keys: their types and descriptions are the schema editors
// validate against (`guild-hall schema meeting`, [`super::schema`]); their values, kept as
// written, are what [`Meeting::parse`] validates.
/// A meeting artifact's frontmatter (`.lore/meetings/<id>.md`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "guild-hall meeting")]
pub(crate) struct Frontmatter {
    #[schemars(with = "Option<String>")]
    title: Option<Value>,
    #[schemars(with = "Option<String>")]
    date: Option<Value>,
    /// A package with the `meeting` capability and a `meeting:` command.
    #[schemars(with = "super::value_schemas::WorkerName")]
    worker: Option<Value>,
    /// requested → open (accept) | declined; open → closed. Anything else is refused.
    #[schemars(with = "Option<MeetingStatus>")]
    status: Option<Value>,
    /// Why we meet (the worker is told).
    #[schemars(with = "Option<String>")]
    agenda: Option<Value>,
    /// Artifacts that prompted it.
    #[schemars(with = "Option<Vec<super::value_schemas::RelPath>>")]
    references: Option<Value>,
    /// Who asked, for requests.
    #[schemars(with = "Option<String>")]
    requested_by: Option<Value>,
    /// Written by guild-hall.
    #[schemars(with = "Option<String>")]
    created: Option<Value>,
    /// Written by guild-hall: the meeting's branch.
    #[schemars(with = "Option<String>")]
    branch: Option<Value>,
    /// Written by guild-hall: the agent's session, resumed on every turn.
    #[schemars(with = "Option<String>")]
    session_id: Option<Value>,
    /// Written by guild-hall: artifacts linked during the meeting, the latest 50; a first entry
    /// "(N more linked artifacts, see the log)" counts the rest.
    #[schemars(with = "Option<Vec<String>>")]
    linked_artifacts: Option<Value>,
    /// Written by guild-hall: progress summaries while open; the notes on close (or, when they
    /// do not fit in the frontmatter, where in the log they are).
    #[schemars(with = "Option<String>")]
    notes: Option<Value>,
    /// Written by guild-hall: why an edit was refused, or why a close waits.
    #[schemars(with = "Option<String>")]
    reason: Option<Value>,
    // Guild Hall's dialect of a meeting.
    /// Guild Hall's dialect: the meeting's timeline (`timestamp`, `event`, `reason`).
    #[schemars(with = "Option<Vec<std::collections::BTreeMap<String, serde_json::Value>>>")]
    meeting_log: Option<Value>,
    /// Guild Hall's dialect: a date before which a requested meeting waits (`""`: none).
    #[schemars(with = "Option<String>")]
    deferred_until: Option<Value>,
    /// Guild Hall's dialect: kept as written.
    #[schemars(with = "Option<Vec<String>>")]
    tags: Option<super::frontmatter::Unread>,
    /// Guild Hall's dialect: its worker's title, kept as written.
    #[serde(rename = "workerDisplayTitle")]
    #[schemars(with = "Option<String>")]
    worker_display_title: Option<super::frontmatter::Unread>,
}

/// The keys only guild-hall writes.
pub(crate) const OWNED_KEYS: [&str; 7] = ["status", "created", "session_id", "branch", "linked_artifacts", "notes", "reason"];

/// A parsed, validated meeting artifact.
#[derive(Debug, Clone)]
pub struct Meeting {
    pub id: String,
    pub path: PathBuf,
    /// Hash of the file's bytes when read: writes are dropped if it changed since.
    pub(crate) hash: u64,
    pub title: Option<String>,
    /// `None` when the file has no `status:` (a new file: a person's meeting, taken as open).
    pub(crate) status: Option<MeetingStatus>,
    pub worker: String,
    pub agenda: Option<String>,
    pub references: Vec<String>,
    /// Who asked for it (a worker, `manager`, a person), for requests.
    pub requested_by: Option<String>,
    /// The keys guild-hall owns ([`OWNED_KEYS`]), as parsed: what its writes are compared with.
    pub fields: Mapping,
    /// The keys guild-hall owns, typed: what every reader reads of them.
    pub owned: Owned,
    /// Guild Hall's dialect: its `meeting_log:` as written.
    pub(crate) log: Vec<super::dialect::Entry>,
    /// Guild Hall's dialect: `deferred_until:`, the date before which a request waits.
    pub(crate) deferred_until: Option<String>,
}

/// What guild-hall last wrote of a meeting, typed ([`OWNED_KEYS`] read once). A key absent, or
/// holding a value of another type (a hand edit), reads as none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owned {
    /// `created:`, when it was made.
    pub(crate) created: Option<String>,
    /// `session_id:`, the agent's session, resumed on every turn.
    pub(crate) session_id: Option<String>,
    /// `branch:`, the meeting's branch.
    pub branch: Option<String>,
    /// `notes:`, progress summaries while open; the notes on close.
    pub notes: Option<String>,
    /// `reason:`, why an edit was refused, or why a close waits.
    pub reason: Option<String>,
}

#[cfg(test)]
/// The keys a meeting's frontmatter may hold (the schema's).
pub(crate) fn meeting_keys() -> &'static [&'static str] {
    super::keys::fields::<Frontmatter>()
}

/// A meeting's schema, built once.
pub(crate) fn meeting_schema() -> &'static serde_json::Value {
    static S: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    S.get_or_init(|| schemars::schema_for!(Frontmatter).to_value())
}

/// The keys a meeting may hold where, from its schema.
pub(crate) fn meeting_shape() -> &'static super::keys::Shape {
    static S: std::sync::OnceLock<super::keys::Shape> = std::sync::OnceLock::new();
    S.get_or_init(|| super::keys::Shape::of(meeting_schema()))
}

impl Meeting {
    /// Parse and validate. Any problem means the artifact must not be acted on or rewritten.
    // Long: each key read in turn, every problem gathered so `check` says all of them.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Meeting, Vec<Problem>> {
        let (stem, split, fields) = read_mapping(path, text)?;
        let mut problems = super::keys::unknown_keys(path, split.yaml, split.first_line, &fields, meeting_shape());
        let mut bad = |key: &str, msg: String| {
            let (line, col) = key_position(&split, key);
            problems.push(Problem::new(path, line, col, msg));
        };
        // Every key declared, taken apart here: a key added to the declaration is read here too.
        let Frontmatter {
            title,
            date: _informational,
            worker,
            status,
            agenda,
            references,
            requested_by,
            created,
            branch,
            session_id,
            linked_artifacts,
            notes,
            reason,
            meeting_log,
            deferred_until,
            tags: _kept_as_written,
            worker_display_title: _kept,
        } = super::frontmatter::declared(&fields);
        let log = match meeting_log.as_ref().map(super::dialect::entries) {
            None => Vec::new(),
            Some(Ok(log)) => log,
            Some(Err(why)) => {
                bad("meeting_log", format!("bad meeting_log: {why}"));
                Vec::new()
            }
        };
        let deferred_until = match &deferred_until {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s))
                if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() || chrono::DateTime::parse_from_rfc3339(s).is_ok() =>
            {
                Some(s.clone())
            }
            Some(v) => {
                bad(
                    "deferred_until",
                    format!(
                        "deferred_until must be a date (YYYY-MM-DD) or \"\", not {}",
                        serde_yaml_ng::to_string(v).unwrap_or_default().trim()
                    ),
                );
                None
            }
        };
        let status = super::vocabulary::status_field::<MeetingStatus>(status.as_ref(), &mut bad);
        let worker = ids::worker_name(worker.as_ref(), "which worker package meets").unwrap_or_else(|why| {
            bad("worker", why.to_string());
            String::new()
        });
        let text_of = |k: &str, v: &Option<Value>, bad: &mut dyn FnMut(&str, String)| match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                bad(k, format!("{k} must be text"));
                None
            }
        };
        let agenda = text_of("agenda", &agenda, &mut bad);
        let requested_by = text_of("requested_by", &requested_by, &mut bad);
        let title = text_of("title", &title, &mut bad);
        let mut paths = |key: &str, v: &Option<Value>| {
            let mut out = Vec::new();
            match v {
                None | Some(Value::Null) => {}
                Some(Value::Sequence(items)) => {
                    for item in items {
                        match item.as_str().map(ids::validate_rel_path) {
                            Some(Ok(p)) => out.push(p),
                            Some(Err(e)) => bad(key, format!("bad path in {key}: {e}")),
                            None => bad(key, format!("{key} must be a list of paths")),
                        }
                    }
                }
                Some(_) => bad(key, format!("{key} must be a list of paths")),
            }
            out
        };
        let references = paths("references", &references);
        paths("linked_artifacts", &linked_artifacts);
        if let Some(v) = &session_id {
            if !v.is_null() && !v.as_str().is_some_and(valid_session_id) {
                bad("session_id", "session_id must be the worker's session id (letters, digits, '-', '_', '.', ':')".into());
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut fields = fields;
        fields.retain(|k, _| k.as_str().is_some_and(|k| OWNED_KEYS.contains(&k)));
        Ok(Meeting {
            id: stem.to_string(),
            path: path.to_path_buf(),
            hash: content_hash(text),
            title,
            status,
            worker,
            agenda,
            references,
            requested_by,
            owned: Owned {
                created: owned_text(created),
                session_id: owned_text(session_id),
                branch: owned_text(branch),
                notes: owned_text(notes),
                reason: owned_text(reason),
            },
            fields,
            log,
            deferred_until,
        })
    }

    pub fn session_id(&self) -> Option<&str> {
        self.owned.session_id.as_deref().filter(|s| !s.is_empty())
    }

    /// The linked artifacts the frontmatter lists (the entry counting more is not one).
    pub fn linked_artifacts(&self) -> Vec<String> {
        self.linked_entries().filter(|e| linked_more_count(e).is_none()).map(str::to_string).collect()
    }

    /// How many more artifacts were linked than the frontmatter lists (all are in the log).
    pub fn linked_more(&self) -> u64 {
        self.linked_entries().find_map(linked_more_count).unwrap_or(0)
    }

    fn linked_entries(&self) -> impl Iterator<Item = &str> {
        self.fields.get("linked_artifacts").and_then(Value::as_sequence).into_iter().flatten().filter_map(Value::as_str)
    }

    /// The status a reader should take: a file without one is a person's meeting (open).
    /// A request deferred (Guild Hall's `deferred_until:`): the date it waits until, said as
    /// the faces prefix it (`deferred until 2026-05-01; `); empty otherwise.
    pub fn deferred(&self) -> String {
        match (&self.deferred_until, self.effective_status()) {
            (Some(d), MeetingStatus::Requested) => format!("deferred until {d}; "),
            _ => String::new(),
        }
    }

    /// A request deferred past `today` (its `deferred_until:` a later date): it waits, and
    /// needs no one yet.
    pub(crate) fn deferred_past(&self, today: chrono::NaiveDate) -> bool {
        self.effective_status() == MeetingStatus::Requested
            && self.deferred_until.as_deref().and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()).is_some_and(|d| d > today)
    }

    pub fn effective_status(&self) -> MeetingStatus {
        self.status.unwrap_or(MeetingStatus::Open)
    }
}

/// A new meeting as guild-hall writes one (`meeting create`, a meeting's follow-up request):
/// the keys a person would write, in the order written, and its opening words.
#[derive(Debug, Clone)]
pub(crate) struct New {
    pub(crate) title: Option<String>,
    pub(crate) worker: String,
    pub(crate) status: MeetingStatus,
    pub(crate) requested_by: Option<String>,
    pub(crate) agenda: Option<String>,
    pub(crate) references: Vec<String>,
    /// When it was made; none for a follow-up (its first pass stamps it).
    pub(crate) created: Option<String>,
    /// Written only when it holds more than blanks.
    pub(crate) body: String,
}

/// The text of the meeting `new`: the one place a meeting's text is composed.
pub(crate) fn render(new: &New) -> String {
    let mut fm = Mapping::new();
    let put = |fm: &mut Mapping, key: &str, v: &Option<String>| {
        if let Some(v) = v {
            fm.insert(key.into(), v.as_str().into());
        }
    };
    put(&mut fm, "title", &new.title);
    fm.insert("worker".into(), new.worker.as_str().into());
    fm.insert("status".into(), new.status.as_str().into());
    put(&mut fm, "requested_by", &new.requested_by);
    put(&mut fm, "agenda", &new.agenda);
    if !new.references.is_empty() {
        fm.insert("references".into(), Value::Sequence(new.references.iter().map(|r| Value::from(r.as_str())).collect()));
    }
    put(&mut fm, "created", &new.created);
    let mut out = format!("---\n{}---\n", super::frontmatter::to_yaml(&fm));
    if !new.body.trim().is_empty() {
        out.push_str(new.body.trim_end());
        out.push('\n');
    }
    out
}

/// The first entry of `linked_artifacts` when more were linked than it lists: how many more
/// (the log has every link). A string, as the schema wants, and a path as `check` reads it.
pub(crate) fn linked_more_entry(n: u64) -> String {
    format!("({n} more linked artifacts, see the log)")
}

/// The count in an entry [`linked_more_entry`] made; `None` for any other entry.
pub(crate) fn linked_more_count(entry: &str) -> Option<u64> {
    entry.strip_prefix('(')?.strip_suffix(" more linked artifacts, see the log)")?.parse().ok()
}

/// A session id as agents print them (UUIDs and the like): safe to pass as an argument and to
/// write into YAML.
pub(crate) fn valid_session_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 200 && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Meeting, Vec<Problem>> {
        Meeting::parse(Path::new(".lore/meetings/m1.md"), text)
    }

    #[test]
    fn parses_a_meeting() {
        let m = parse("---\ntitle: T\nworker: scribe\nstatus: requested\nagenda: why\nreferences: [.lore/a.md]\n---\nHello\n").unwrap();
        assert_eq!(m.id, "m1");
        assert_eq!(m.status, Some(MeetingStatus::Requested));
        assert_eq!(m.references, vec![".lore/a.md"]);
        assert_eq!(m.agenda.as_deref(), Some("why"));
        let m = parse("---\nworker: scribe\n---\n").unwrap();
        assert_eq!(m.effective_status(), MeetingStatus::Open);
    }

    fn new_meeting() -> New {
        New {
            title: Some("Follow-up: the parser".into()),
            worker: "scribe".into(),
            status: MeetingStatus::Requested,
            requested_by: Some("manager".into()),
            agenda: Some("why it fails".into()),
            references: vec![".lore/a.md".into()],
            created: Some("2026-01-02T03:04:05.000006Z".into()),
            body: "Hello\n\n".into(),
        }
    }

    /// The keys in the order a person reads them; only what is set; a blank body not written.
    #[test]
    fn a_new_meeting_is_written_as_always() {
        assert_eq!(
            render(&new_meeting()),
            "---\ntitle: 'Follow-up: the parser'\nworker: scribe\nstatus: requested\nrequested_by: manager\nagenda: why it fails\nreferences:\n- .lore/a.md\ncreated: 2026-01-02T03:04:05.000006Z\n---\nHello\n"
        );
        let bare = New {
            title: None,
            status: MeetingStatus::Open,
            requested_by: None,
            agenda: None,
            references: Vec::new(),
            created: None,
            body: " \n".into(),
            ..new_meeting()
        };
        assert_eq!(render(&bare), "---\nworker: scribe\nstatus: open\n---\n");
    }

    proptest::proptest! {
        /// What the renderer writes, the parser reads back as the same values.
        #[test]
        fn what_is_rendered_parses_back_the_same(
            title in proptest::option::of("\\PC{0,40}|yes|null|- x|a: b"),
            worker in "[a-z][a-z0-9_-]{0,12}",
            status in proptest::sample::select(MeetingStatus::ALL.to_vec()),
            requested_by in proptest::option::of("[a-z]{1,10}"),
            agenda in proptest::option::of("\\PC{0,40}(\n\\PC{0,30}){0,3}"),
            references in proptest::collection::vec("[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}\\.md", 0..3),
            body in "\\PC{0,60}(\n\\PC{0,30}){0,3}",
        ) {
            let new = New { title, worker, status, requested_by, agenda, references, body, ..new_meeting() };
            let text = render(&new);
            let m = parse(&text).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:?}")))?;
            proptest::prop_assert_eq!(&m.title, &new.title);
            proptest::prop_assert_eq!(&m.worker, &new.worker);
            proptest::prop_assert_eq!(m.status, Some(new.status));
            proptest::prop_assert_eq!(&m.requested_by, &new.requested_by);
            proptest::prop_assert_eq!(&m.agenda, &new.agenda);
            proptest::prop_assert_eq!(&m.references, &new.references);
            proptest::prop_assert_eq!(&m.owned.created, &new.created);
            let body = if new.body.trim().is_empty() { String::new() } else { format!("{}\n", new.body.trim_end()) };
            // The body is the file's, after the frontmatter (the artifact itself keeps none).
            let split = crate::artifact::frontmatter::split(&text).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:?}")))?;
            proptest::prop_assert_eq!(split.body.to_string(), body);
        }
    }

    /// Guild-hall's keys are read once, typed; a hand edit of another type reads as none.
    #[test]
    fn the_owned_keys_are_typed() {
        let m = parse("---\nworker: scribe\ncreated: c\nsession_id: s-1\nbranch: b\nnotes: 5\nreason: r\n---\n").expect("valid");
        let typed = Owned {
            created: Some("c".into()),
            session_id: Some("s-1".into()),
            branch: Some("b".into()),
            notes: None,
            reason: Some("r".into()),
        };
        assert_eq!(m.owned, typed);
        assert_eq!(m.session_id(), Some("s-1"));
    }

    #[test]
    fn the_entry_counting_more_links_is_valid_and_no_link() {
        let text = format!("---\nworker: scribe\nlinked_artifacts: [\"{}\", .lore/a.md]\n---\n", linked_more_entry(2951));
        let m = parse(&text).expect("valid");
        assert_eq!(m.linked_artifacts(), vec![".lore/a.md"]);
        assert_eq!(m.linked_more(), 2951);
        assert_eq!(linked_more_count(".lore/(3 more).md"), None);
    }

    #[test]
    fn reports_problems_with_positions() {
        let e = parse("---\nworker: scribe\nstatus: pending\n---\n").unwrap_err();
        assert_eq!(
            e[0].to_string(),
            ".lore/meetings/m1.md:3:9: unknown meeting status \"pending\" (expected one of: requested, open, closed, declined)"
        );
        let e = parse("---\nworker: scribe\nreferences: [../../etc/passwd]\n---\n").unwrap_err();
        assert!(e[0].message.contains("bad path in references"), "{e:?}");
        let e = parse("---\nworker: scribe\nsession_id: \"a b; rm -rf\"\n---\n").unwrap_err();
        assert!(e[0].message.contains("session_id"), "{e:?}");
        assert!(parse("---\nagenda: x\n---\n").unwrap_err()[0].message.contains("worker"));
    }
}
