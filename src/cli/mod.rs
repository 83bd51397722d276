//! Command-line front end: clap definitions and thin handlers that call the library. No
//! business logic lives here; output formatting (tables, JSON) does.

mod answer;
mod ci;
mod commission;
mod diff;
mod integrate;
mod job;
mod meeting;
pub(crate) mod out;
pub(crate) mod plan;
mod review;
mod serve;
mod show;
mod sync;
mod tools;
mod usage;
mod workers;

#[cfg(test)]
mod tests;

use out::say_err;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use guild_hall::config::{Home, Project};

/// guild-hall turns markdown commissions into running, merged agent work.
///
/// Write a commission under .lore/commissions/, then run `guild-hall reconcile --once --wait`
/// (or keep `guild-hall watch` running): each commission gets its own branch, worktree and
/// worker process, and finished work is squash-merged into the integration branch.
#[derive(Debug, Parser)]
#[command(name = "guild-hall", version, propagate_version = true)]
pub struct Cli {
    /// Project directory (any directory inside the git repository). Default: current directory.
    /// `board` takes it more than once (several projects on one board).
    #[arg(short = 'C', global = true, value_name = "DIR", action = clap::ArgAction::Append)]
    pub dirs: Vec<PathBuf>,
    /// Home for worktrees, runtime state and config. Default: $GUILD_HALL_HOME, else ~/.guild-hall.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// More log detail (-v info, -vv debug). RUST_LOG overrides; NO_COLOR turns colours off.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up the project: .lore/ directories, the integration branch, registration. Idempotent.
    Init,
    /// One pass: observe, plan and act until nothing more can be done now, then exit.
    ///
    /// `reconcile` and `reconcile --once` are the same: one pass is what this command does
    /// (`--once` is accepted and is the default). For a reconciler that keeps running, use
    /// `guild-hall watch`; to pass until every commission is settled, `--wait`.
    Reconcile(ReconcileArgs),
    /// Run guild-hall in CI, as many times as it is triggered: settle, commit, push.
    ///
    /// In a clean checkout of the base branch (a CI one: it switches branches; another branch
    /// or a detached checkout is refused): fetch the remote, adopt its integration branch,
    /// bring the base branch into it as `sync` does, reconcile until settled, commit the
    /// artifacts guild-hall wrote onto the integration branch (where the next run reads them;
    /// work still under way when it timed out is left out, to start again next run) and push
    /// it, never forced. A push that lost a race to another run is said in one line and exits
    /// 0: the next run converges. Exit 1 as `reconcile --wait`: a failed action, an invalid
    /// artifact, a timeout.
    Ci(ci::CiArgs),
    /// Run the reconciler as a service: react to file edits, commits, worker events and timers.
    ///
    /// Watches the given project directories, or every project registered in
    /// $GUILD_HALL_HOME/config.yaml. Runs in the foreground; SIGINT/SIGTERM stop it (workers
    /// keep running and are re-adopted on the next start); SIGHUP reloads configuration.
    Watch(WatchArgs),
    /// The web face: the board, commissions, plans and meetings in a browser, live, with the
    /// actions a person takes on them — beside a reconciler run as `watch` runs it.
    ///
    /// Serves the projects named with -C (repeatable), or the current directory's. Its first line
    /// on stdout is the URL to open: it carries a token valid while the server runs (the
    /// browser keeps it as a cookie after the first visit); without it every request is
    /// refused (401). Loopback only; a worker's processes are refused. For each project no
    /// other guild-hall process reconciles, it runs the reconciler in-process (as `watch`);
    /// the others are left to theirs. SIGINT/SIGTERM stop it. See docs/web.md.
    Serve(serve::ServeArgs),
    /// A live view of the commissions, plans and meetings, with the actions a person takes on
    /// them: a full-screen terminal UI (`?` lists the keys).
    ///
    /// Shows the project (-C DIR, repeatable for several), or with --all every project
    /// registered in the home. It follows the files as they change (no polling at rest) and
    /// acts through the same operations as the CLI: `c` cancels (asks y/n), `r` re-dispatches
    /// or retries, `d` dispatches a draft, `a`/`x` accept or decline a meeting request, `m`
    /// chats, `l` pages the log, `e` edits the artifact, `n` writes a new commission. Against a
    /// running `watch` it only writes intent; alone, `w` (or --reconcile) runs a `watch` for
    /// the session. NO_COLOR or TERM=dumb turns colours off.
    Board {
        /// Every project registered in the home (`guild-hall init` registers a project).
        #[arg(long)]
        all: bool,
        /// Run a reconciler (`guild-hall watch`) for the session at once, for the projects no
        /// other guild-hall process reconciles.
        #[arg(long)]
        reconcile: bool,
    },
    /// Show commissions: status, worker, attempt, age, heartbeat, progress or reason; and
    /// orphans (what is left of commissions and meetings whose artifact is gone).
    Status {
        /// Only this commission.
        #[arg(value_name = "COMMISSION")]
        id: Option<String>,
        /// Print the commissions' rows as a JSON array, streamed row by row (with COMMISSION: its
        /// row as an object). Plans are not in it: `guild-hall plan list --json` gives them.
        #[arg(long)]
        json: bool,
        /// Only commissions and plans with this status (repeatable; also `invalid`, `orphaned`).
        #[arg(long = "status", value_name = "STATUS")]
        status: Vec<String>,
        /// Only commissions, and plans' tasks, of this worker (repeatable).
        #[arg(long = "worker", value_name = "WORKER")]
        worker: Vec<String>,
    },
    /// Remove orphans: runtime dirs, worktrees, transcripts and branches of commissions and
    /// meetings whose artifact is gone, when they are provably guild-hall's. Prints each.
    Gc {
        /// Say what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print what was removed and what was kept (with why) as one JSON object.
        #[arg(long)]
        json: bool,
        /// Also remove orphans with work found nowhere else (unmerged branch commits, changes
        /// in a worktree).
        #[arg(long)]
        include_unmerged: bool,
    },
    /// Print the JSON Schema of a commission, meeting or plan frontmatter, or of worker.yaml
    /// (for editors: yaml-language-server).
    Schema {
        /// Which schema: the frontmatter of a commission, meeting or plan, or worker.yaml.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(guild_hall::schema::KINDS))]
        kind: String,
    },
    /// Print a shell completion script (ids of commissions and meetings complete too).
    Completions {
        /// The shell the script is for.
        shell: integrate::Shell,
    },
    /// Print the man page (roff), or write one page per command into a directory.
    ///
    /// `guild-hall man --dir ~/.local/share/man/man1` writes guild-hall.1 and a page for every
    /// subcommand, named as git names its own (guild-hall-commission-create.1), and prints each
    /// path written; `man guild-hall-commission-create` then finds it.
    Man {
        /// Write every page into this directory instead of printing the top one.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the ids of the project's commissions or meetings, one a line (for completion).
    #[command(hide = true)]
    Ids {
        /// Which ids: the commissions' or the meetings'.
        #[arg(value_parser = ["commissions", "meetings"])]
        kind: String,
    },
    /// Create, dispatch, cancel or re-dispatch commissions.
    #[command(subcommand)]
    Commission(commission::CommissionCmd),
    /// Approve a commission in review: its work is squash-merged into the integration branch
    /// and it completes (writes `desired: approved`).
    ///
    /// A commission is in review when `review: required` (in it, its worker package's
    /// worker.yaml, or .lore/guild-hall.yaml) and its worker submitted: its work is committed
    /// on its branch, nothing merged. `guild-hall diff <id>` shows the work.
    Approve(review::Approve),
    /// Send a commission in review back with feedback: a new attempt continues on the same
    /// branch (its worktree starts with the earlier work), its prompt given the feedback under
    /// "Feedback on attempt N", in the same agent session where its package can resume one
    /// (writes `desired: revised` and `feedback:`).
    ///
    /// Example: guild-hall revise fix-parser -m "handle empty input" --at src/parse.rs:42 "this panics on an empty line"
    Revise(review::Revise),
    /// Reject a commission in review: it is cancelled, its work kept on its branch (writes
    /// `desired: rejected`, with -m as `feedback:`).
    Reject(review::Reject),
    /// Answer a question a commission's worker asked and waits on (its toolbox's `ask`).
    ///
    /// The oldest open question, or `--question N` (`status` and the artifact's `questions:`
    /// show the number). Writes `answer:` into the commission, as a person may in any editor;
    /// the reconciler moves it into `questions:` and hands it to the worker, which goes on.
    /// Refused, nothing written, when no question is open.
    Answer(answer::AnswerArgs),
    /// The dispatcher's operations (as `mcp --manager` and `worker/*` serve them): dispatch,
    /// list, status, result, cancel, delete, meeting-request. Prints JSON.
    Job(job::JobCall),
    /// Meet a worker live: start, chat, send, list, show, accept, decline, close.
    ///
    /// A meeting is `.lore/meetings/<id>.md`; editing its `status:` in any editor does the
    /// same as these commands (requested → open | declined, open → closed).
    #[command(subcommand)]
    Meeting(meeting::MeetingCmd),
    /// Plans: ordered waves of parallel tasks, copied back in plan order, verified between
    /// waves: create, show, retry, cancel, logs.
    #[command(subcommand)]
    Plan(plan::PlanCmd),
    /// Bring the base branch (the person's: `base_branch:` or `follow:` in
    /// .lore/guild-hall.yaml, else the branch `init` started from, else main or master) into
    /// the integration branch, so that new work starts from it.
    ///
    /// A fast-forward when the integration branch is behind, else a merge commit; never a
    /// rewrite. Conflicts, or local changes in a checkout of the integration branch that the
    /// move would touch, stop it with the paths named and nothing changed (exit 1). First, a
    /// local integration branch behind a remote's copy (`origin/claude/main` after a fetch:
    /// what CI or a teammate landed) is fast-forwarded to it.
    Sync {
        /// Say what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bring the integration branch's finished work into the base branch, or push it for a
    /// pull request.
    ///
    /// A fast-forward when possible, else a merge commit; a checkout of the base branch is
    /// updated with it, and nothing is done when that checkout has local changes in the way
    /// (the files are named; exit 1). With --push REMOTE, the integration branch is pushed to
    /// the branch of the same name on REMOTE instead (never forced; a rejection exits 1) and
    /// the base branch is left alone. Either way, a local integration branch behind a remote's
    /// copy is first fast-forwarded to it, so the team's finished work lands too.
    Land {
        /// Push the integration branch to this remote instead of touching the base branch.
        #[arg(long, value_name = "REMOTE")]
        push: Option<String>,
        /// Say what would happen; change nothing (a push asks the remote with `--dry-run`).
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show an artifact's activity timeline: a commission's, a meeting's, a plan's, or a wave
    /// task's (the plan's entries for it). An id two kinds hold is refused, naming them.
    ///
    /// With `-f`, new entries are printed as they are written, until it has settled: a
    /// commission no longer pending, blocked or at work; a meeting closed or declined; a plan
    /// neither pending nor at work; a wave task no longer queued or running. Then exit 0.
    Timeline {
        /// A commission, meeting or plan id (its file stem under .lore/), or a wave task's
        /// canonical id (`<plan>:exec:wave-<W>:task-<T>`).
        #[arg(value_name = "ID")]
        id: String,
        /// Print the raw JSON lines.
        #[arg(long)]
        json: bool,
        /// Follow: print entries as they are written until it has settled.
        #[arg(short = 'f', long)]
        follow: bool,
    },
    /// Show what the project's work used: the tokens and dollars of every ended attempt of its
    /// commissions and plan tasks, summed by commission (a wave task by its id), worker, plan
    /// or day.
    ///
    /// Each figure is what the attempt's agent reported on its output (Claude Code, Codex,
    /// Gemini CLI, an ACP agent that sends it) or its worker with `toolbox report-usage`;
    /// dollars as reported, else priced from `prices:` in $GUILD_HALL_HOME/config.yaml, else
    /// none (`-`: tokens only). An attempt still running is counted once it ends.
    Usage {
        /// Only attempts that ended on or after this day (2026-11-01) or time (RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Group by commission, worker, plan or day.
        #[arg(long, value_name = "GROUP", default_value = "commission", value_parser = ["commission", "worker", "plan", "day"])]
        by: String,
        /// Print the report as JSON: {by, since, rows: [{key, attempts, usage}], total}.
        #[arg(long)]
        json: bool,
    },
    /// Show which commissions, meetings and plan tasks produced a file: every commit of the
    /// integration branch's first-parent chain that changed it, newest first, with its date,
    /// what it did to the path and whose work it landed (from its `Guild-Hall-*` trailer; a
    /// commit without one, a person's or one `sync` brought in, says so).
    Show {
        /// A file or directory of the project, relative to the current directory (or to -C
        /// DIR); it may be gone from the checkout.
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Print the history as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a worker's captured stdout and stderr.
    ///
    /// Control characters in it (escape sequences, `\r`, bidi overrides) are shown as escapes
    /// such as `\x1b`, not carried out by the terminal; newlines and tabs stay. `--raw` writes
    /// the log's bytes exactly (for a file or a program).
    ///
    /// With `-f`, output is printed as the worker writes it, like `tail -f`, until its attempt
    /// has ended and everything was printed; then exit 0.
    Logs {
        /// A commission id (its file stem under .lore/commissions/), or a wave task's canonical
        /// id (`<plan>:exec:wave-<W>:task-<T>`).
        #[arg(value_name = "ID")]
        id: String,
        /// Which attempt (default: the latest).
        #[arg(long)]
        attempt: Option<u32>,
        /// The log's bytes exactly as the worker wrote them, control characters included.
        #[arg(long)]
        raw: bool,
        /// Follow: print output as it is written until the attempt has ended.
        #[arg(short = 'f', long)]
        follow: bool,
    },
    /// Show the change a commission's latest attempt brings onto the integration branch: its
    /// branch from the merge base with the integration branch to its tip (what the squash
    /// merge brings), read from git's objects. A wave task's: the commit its copy-back made.
    ///
    /// On a terminal it is coloured and shown through the pager as git's diff is (GIT_PAGER,
    /// else PAGER, else `less`; --no-pager for none); to a pipe or a file, plain. Control
    /// characters a worker wrote are shown as escapes (`\x1b`), not carried out. A binary
    /// file is said to differ ("Binary files a/x and b/x differ"; `Bin 3 -> 5 bytes` in the
    /// stat). An id with no branch (never dispatched, or its branch is gone) is not found:
    /// exit 3.
    Diff {
        /// A commission id (its file stem under .lore/commissions/), or a wave task's canonical
        /// id (`<plan>:exec:wave-<W>:task-<T>`, as `plan show` lists it).
        #[arg(value_name = "ID")]
        id: String,
        /// Only the stat: each file's lines changed, as `git diff --stat` shows them.
        #[arg(long)]
        stat: bool,
        /// Print `{"id", "branch", "base", "tip", "files": [{"path", "old_path"?, "status",
        /// "additions", "deletions", "binary", "patch"}], "additions", "deletions"}`; `patch`
        /// is null for a binary file and left out with --stat.
        #[arg(long)]
        json: bool,
        /// Write to stdout, not through the pager.
        #[arg(long)]
        no_pager: bool,
    },
    /// Validate every artifact and worker package; exit 1 if any is invalid. Commissions
    /// waiting for their worker's package are listed too, without failing.
    Check {
        /// Print every finding (problems, orphans, unsettled work) as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Worker packages: those installed here and where each was found; with --available, those
    /// bundled in this binary; `workers add NAME` installs a bundled one.
    Workers(workers::WorkersArgs),
    /// The toolbox as a stdio MCP server, for agent CLIs (reads its commission from the
    /// environment guild-hall gives a worker); with --manager, the dispatcher API for a main
    /// agent that hands out work (dispatch, list, status, result, cancel, delete).
    Mcp {
        /// Serve the dispatcher API for the project (-C) instead of a worker's toolbox.
        #[arg(long)]
        manager: bool,
    },
    /// Tools for worker processes: report progress, log questions and decisions, store
    /// memories, write and read files under .lore/, submit the result.
    Toolbox(tools::ToolCall),
    /// Compact a worker's memory with its package's `compact` command (internal).
    #[command(hide = true)]
    MemoryCompact {
        /// The project's memory dir ($GUILD_HALL_HOME/memory/<project>/).
        #[arg(long)]
        memory_dir: PathBuf,
        /// The worker package whose `compact` command runs.
        #[arg(long)]
        package: PathBuf,
        /// Whose memory (its dir under --memory-dir): the package's name unless given (a Guild
        /// Hall roster worker's is its identity's).
        #[arg(long, value_name = "KEY")]
        memory: Option<String>,
        /// Run the compact command without Landlock confinement.
        #[arg(long)]
        unconfined: bool,
    },
    /// Run an Agent Client Protocol agent for one commission attempt or meeting turn: guild-hall
    /// is the client (internal; the launch site puts it in front of a `protocol: acp` package's
    /// command).
    #[command(hide = true)]
    Acp {
        /// A tool (name or ACP kind) allowed besides the toolbox (repeatable).
        #[arg(long = "allow", value_name = "TOOL")]
        allow: Vec<String>,
        /// Open the agent's sessions in a directory of DIR's named after the worktree, not in
        /// the worktree (`acp.session_dir`).
        #[arg(long = "session-dir", value_name = "DIR")]
        session_dir: Option<PathBuf>,
        /// The agent's command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// Run the `notify:` command with one event from the outbox (given on its stdin), killing
    /// it after TIMEOUT (internal: a pass starts it, detached, and never waits for it).
    #[command(hide = true)]
    NotifySend {
        /// How long the command may run before its process group is killed.
        #[arg(long, value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
        /// The event's file in the outbox (claimed before the command runs).
        #[arg(long)]
        event: PathBuf,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// The supervisor that runs one worker process (internal). Its command line is the
    /// library's (`worker::shim::ShimArgv`), read by it.
    #[command(hide = true, disable_help_flag = true)]
    Shim {
        /// The supervisor's own arguments, as `worker::shim::ShimArgv` writes them, then `--`
        /// and the worker's command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
}

impl Cli {
    /// The project directory `-C` names, if it does: one, for every command but `board`.
    pub fn project(&self) -> Result<Option<PathBuf>> {
        match self.dirs.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.clone())),
            many => anyhow::bail!("-C is given {} times: only `guild-hall board` shows several projects", many.len()),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Project directories (default: every registered project).
    pub dirs: Vec<PathBuf>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "human")]
    pub log_format: LogFormat,
    /// Full pass for every project this often, whatever happened.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub resync: std::time::Duration,
    /// How long a partial write waits before it is handled (a file closed after writing,
    /// renamed into place or removed is handled at once).
    #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
    pub debounce: std::time::Duration,
    /// Another glob of paths whose changes are ignored (repeatable; editor swap and backup
    /// files are ignored already).
    #[arg(long = "ignore", value_name = "GLOB")]
    pub ignore: Vec<String>,
    /// Poll the filesystem instead of using the native watcher (network filesystems).
    #[arg(long)]
    pub poll: bool,
    /// Serve the worker/* JSON-RPC API (HTTP POST /mcp) on this Unix socket (mode 0600).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Serve it on this loopback address too, e.g. 127.0.0.1:7777; every request needs
    /// `Authorization: Bearer <token>` with the token in $GUILD_HALL_HOME/token.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Connections the endpoint serves at once; one more is answered 503 at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Time a client has to send its whole request (headers and body) to the endpoint.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub request_timeout: std::time::Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ReconcileArgs {
    /// One pass, then exit: the default (and only) mode of this command, accepted for scripts
    /// that say it; `guild-hall watch` runs continuously.
    #[arg(long)]
    pub once: bool,
    /// Print the plan; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Keep passing until every commission is settled (terminal, draft, or blocked on nothing
    /// that is running).
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this long (e.g. 90s, 10m) and exit 1.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Print the actions taken (or planned) as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// If another reconciler (e.g. `guild-hall watch`) holds the project, wait for it instead
    /// of exiting.
    #[arg(long)]
    pub wait_lock: bool,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Watch(w) => init_tracing(cli.verbose + 1, w.log_format == LogFormat::Json),
        Command::Serve(_) => init_tracing(cli.verbose + 1, false),
        // The board owns the screen: its log goes to a file (`board` sets it up).
        Command::Board { .. } => {}
        _ => init_tracing(cli.verbose, false),
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            say_err!("error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The exit code of a command that failed, by the kind of its error (docs/commands.md, "Exit
/// codes"): one that does not say its kind is a refusal, exit 1 as ever.
fn exit_code(e: &anyhow::Error) -> u8 {
    guild_hall::tools::ErrorKind::of(e).unwrap_or(guild_hall::tools::ErrorKind::Refused).exit_code()
}

fn init_tracing(verbose: u8, json: bool) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    // The file watcher's own warnings (`notify`: "unable to remove watch descriptor" when a
    // watched directory went away) are its business, not the person's: errors only, unless
    // RUST_LOG asks for more.
    let default = format!("{default},notify=error");
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    use std::io::IsTerminal;
    // Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    // A log that cannot be written (the terminal went away, stderr is a closed pipe) is
    // dropped: the subscriber's own report of that would panic on the same closed stderr.
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(colour).log_internal_errors(false);
    // JSON escapes its own control characters; the human format is shown, not obeyed.
    let _ = if json { builder.with_writer(std::io::stderr).json().try_init() } else { builder.with_writer(|| out::LogStderr).try_init() };
}

/// The project and home every project command needs.
pub(crate) struct Env {
    pub home: Home,
    pub project: Project,
}

impl Env {
    /// The project and home of a command that needs a project `init` has set up: refused,
    /// saying to run `guild-hall init`, when it is not.
    fn load(cli: &Cli) -> Result<Env> {
        let env = Env::open(cli)?;
        guild_hall::ops::ensure_set_up(&env.project)?;
        Ok(env)
    }

    /// [`Env::load`] for `check`: a clone whose remote has the integration branch counts too.
    fn checkable(cli: &Cli) -> Result<Env> {
        let env = Env::open(cli)?;
        guild_hall::ops::ensure_checkable(&env.project)?;
        Ok(env)
    }

    /// The project and home, set up or not (`init` itself; `ci`, which runs `init`; the
    /// completion of ids).
    fn open(cli: &Cli) -> Result<Env> {
        let dir = match cli.project()? {
            Some(d) => d,
            None => std::env::current_dir().context("reading the current directory")?,
        };
        let home = Home::resolve(cli.home.as_deref())?;
        let project = Project::open(&dir)?;
        Ok(Env { home, project })
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let ok = |b: bool| if b { ExitCode::SUCCESS } else { ExitCode::from(1) };
    match &cli.command {
        Command::Shim { args } => {
            let args = guild_hall::worker::shim::ShimArgv::parse(args.iter().cloned())?;
            let code = guild_hall::worker::shim::run_shim(&args, &guild_hall::worker::runner::admit)?;
            Ok(ExitCode::from(code.clamp(0, 255) as u8))
        }
        Command::NotifySend { timeout, event, argv } => {
            guild_hall::reconcile::notifications::deliver(argv, event, *timeout);
            Ok(ExitCode::SUCCESS)
        }
        Command::Acp { allow, session_dir, argv } => {
            let term = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGTERM, term.clone())?;
            signal_hook::flag::register(signal_hook::consts::SIGINT, term.clone())?;
            let turn = guild_hall::worker::acp::Turn::from_env(argv.clone(), allow.clone(), session_dir.as_deref())?;
            let code = guild_hall::worker::acp::run(&turn, &mut std::io::stdout(), &mut std::io::stderr(), &term);
            Ok(ExitCode::from(code.clamp(0, 255) as u8))
        }
        Command::Toolbox(cmd) => commission::toolbox(cmd).map(|_| ExitCode::SUCCESS),
        Command::Mcp { manager: false } => {
            guild_hall::tools::toolbox::serve_stdio(guild_hall::worker::toolbox::WorkerContext::from_env()?).map(|_| ExitCode::SUCCESS)
        }
        Command::Mcp { manager: true } => {
            let env = Env::load(&cli)?;
            guild_hall::service::manager::serve_stdio(env.home, env.project).map(|_| ExitCode::SUCCESS)
        }
        Command::MemoryCompact { memory_dir, package, memory, unconfined } => {
            let pkg = guild_hall::worker::Package::load(package)?;
            let home = guild_hall::config::Home::resolve(cli.home.as_deref())?;
            let key = memory.clone().unwrap_or_else(|| pkg.manifest.name.clone());
            guild_hall::worker::memory::compact(&home.root, memory_dir, &pkg, &key, !*unconfined)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Init => {
            let env = Env::open(&cli)?;
            commission::init(&env)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Reconcile(args) => show::reconcile(&Env::load(&cli)?, args).map(ok),
        Command::Ci(args) => ci::run(&Env::open(&cli)?, args).map(ok),
        Command::Watch(args) => {
            let home = Home::resolve(cli.home.as_deref())?;
            let mut dirs = args.dirs.clone();
            if dirs.is_empty() {
                if let Some(d) = cli.project()? {
                    dirs.push(d);
                }
            }
            let opts = guild_hall::service::watch::WatchOptions {
                resync: args.resync,
                debounce: args.debounce,
                ignore: args.ignore.clone(),
                poll: args.poll,
                socket: args.socket.clone(),
                listen: args.listen.clone(),
                limits: guild_hall::service::rpc::Limits {
                    max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
                    request_timeout: args.request_timeout,
                },
                // A person reads each action as `reconcile` says it; a program reads the JSON log.
                report: (args.log_format == LogFormat::Human)
                    .then_some(show::watch_entry as fn(Option<&str>, &guild_hall::reconcile::Entry)),
            };
            guild_hall::service::watch::watch(&home, &dirs, &opts)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve::run(&cli, args).map(|_| ExitCode::SUCCESS),
        Command::Board { all, reconcile } => board(&cli, *all, *reconcile).map(|_| ExitCode::SUCCESS),
        Command::Status { id, json, status, worker } => {
            show::status(&Env::load(&cli)?, id.as_deref(), *json, &show::Filter { status: status.clone(), worker: worker.clone() }).map(ok)
        }
        Command::Gc { dry_run, json, include_unmerged } => show::gc(&Env::load(&cli)?, *dry_run, *json, *include_unmerged).map(ok),
        Command::Schema { kind } => integrate::schema(kind).map(|_| ExitCode::SUCCESS),
        Command::Completions { shell } => integrate::completions(*shell).map(|_| ExitCode::SUCCESS),
        Command::Man { dir } => integrate::man(dir.as_deref()).map(|_| ExitCode::SUCCESS),
        Command::Ids { kind } => integrate::ids(&Env::open(&cli)?, kind).map(|_| ExitCode::SUCCESS),
        Command::Commission(cmd) => commission::run(&Env::load(&cli)?, cmd).map(|_| ExitCode::SUCCESS),
        Command::Approve(a) => review::approve(&Env::load(&cli)?, a).map(|_| ExitCode::SUCCESS),
        Command::Revise(r) => review::revise(&Env::load(&cli)?, r).map(|_| ExitCode::SUCCESS),
        Command::Reject(r) => review::reject(&Env::load(&cli)?, r).map(|_| ExitCode::SUCCESS),
        Command::Meeting(cmd) => meeting::run(&Env::load(&cli)?, cmd).map(|_| ExitCode::SUCCESS),
        Command::Job(call) => job::run(&Env::load(&cli)?, call).map(|_| ExitCode::SUCCESS),
        Command::Answer(args) => answer::run(&Env::load(&cli)?, args).map(|_| ExitCode::SUCCESS),
        Command::Plan(cmd) => plan::run(&Env::load(&cli)?, cmd).map(|_| ExitCode::SUCCESS),
        Command::Sync { dry_run, json } => sync::sync(&Env::load(&cli)?, *dry_run, *json).map(ok),
        Command::Land { push, dry_run, json } => sync::land(&Env::load(&cli)?, push.as_deref(), *dry_run, *json).map(ok),
        Command::Timeline { id, json, follow } => show::timeline(&Env::load(&cli)?, id, *json, *follow).map(|_| ExitCode::SUCCESS),
        Command::Usage { since, by, json } => usage::usage(&Env::load(&cli)?, since.as_deref(), by, *json).map(|_| ExitCode::SUCCESS),
        Command::Show { path, json } => show::produced(&cli, &Env::load(&cli)?, path, *json).map(|_| ExitCode::SUCCESS),
        Command::Logs { id, attempt, raw, follow } => show::logs(&Env::load(&cli)?, id, *attempt, *raw, *follow).map(|_| ExitCode::SUCCESS),
        Command::Diff { id, stat, json, no_pager } => {
            diff::diff(&Env::load(&cli)?, id, &diff::Shown { stat: *stat, json: *json, no_pager: *no_pager }).map(|_| ExitCode::SUCCESS)
        }
        Command::Check { json } => show::check(&Env::checkable(&cli)?, *json).map(ok),
        Command::Workers(args) => workers::run(&cli, args).map(|_| ExitCode::SUCCESS),
    }
}

/// `guild-hall board`: the projects named (-C, repeatable), every registered one (--all), or the
/// current directory's.
fn board(cli: &Cli, all: bool, reconcile: bool) -> Result<()> {
    let home = Home::resolve(cli.home.as_deref())?;
    let dirs = match (all, cli.dirs.is_empty()) {
        (true, true) => guild_hall::board::registered(&home)?,
        (true, false) => anyhow::bail!("--all shows every registered project: name none with -C"),
        (false, true) => vec![std::env::current_dir().context("reading the current directory")?],
        (false, false) => cli.dirs.clone(),
    };
    let projects = dirs
        .iter()
        .map(|d| {
            let project = Project::open(d)?;
            guild_hall::ops::ensure_set_up(&project)?;
            Ok(project)
        })
        .collect::<Result<Vec<_>>>()?;
    // The screen is the board's: what is logged goes to board.log in the home.
    let log = std::fs::File::create(home.root.join("board.log")).context("creating board.log in the home")?;
    let level = ["warn", "info", "debug"][usize::from(cli.verbose.min(2))];
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{level},notify=error,notify_debouncer_full=error")));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(std::sync::Mutex::new(log)).try_init();
    let opts = guild_hall::board::Options { reconcile, ..Default::default() };
    guild_hall::board::run(&home, projects, &opts)
}
