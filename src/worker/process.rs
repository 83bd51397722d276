//! Process utilities, below everything else in `worker/`: the machine's process table as Linux
//! `/proc` shows it (stat, environment, parent, working directory), the boot id, descendants,
//! pidfds (a signal that cannot reach a reused pid), and a session of one's own. Reached through
//! `Processes`, so that what builds on it (the shim's supervisor) is tested against its fake.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// The environment variable that marks every process of one attempt (its value is the run id).
pub(crate) const RUN_ID_VAR: &str = "GUILD_HALL_RUN_ID";

/// The kernel's boot id: a pid from another boot is never alive.
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Parsed `/proc/<pid>/stat`: state, start time and CPU ticks (self + reaped children).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) state: char,
    pub(crate) start_time: u64,
    pub(crate) cpu_ticks: u64,
}

impl ProcStat {
    /// Dead, waiting to be reaped (or being torn down): nothing left of it runs.
    pub(crate) fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (field 2, in parentheses, which may
/// contain spaces): field N is at index N - 3.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.get(text.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

pub(crate) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let f = stat_fields(pid)?;
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat { state: f.first()?.chars().next()?, start_time: num(22)?, cpu_ticks: num(14)? + num(15)? + num(16)? + num(17)? })
}

/// One row of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcEntry {
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    /// Dead, waiting to be reaped by its parent: nothing left to stop.
    pub(crate) zombie: bool,
}

fn read_entry(pid: i32) -> Option<ProcEntry> {
    let f = stat_fields(pid)?;
    // Fields 3 (state) and 4 (ppid).
    let zombie = matches!(f.first()?.as_str(), "Z" | "X");
    Some(ProcEntry { pid, ppid: f.get(1)?.parse().ok()?, zombie })
}

/// Every descendant of `root` in `table` (children, their children, ...).
pub(crate) fn descendants_in(table: &[ProcEntry], root: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        let children: Vec<i32> = table.iter().filter(|e| e.ppid == p && e.pid != root && !out.contains(&e.pid)).map(|e| e.pid).collect();
        out.extend(&children);
        frontier.extend(children);
    }
    out
}

/// Whether one `NAME=value` entry of a process's environment (as `/proc/<pid>/environ` holds it,
/// NUL-separated) is `entry`.
pub(crate) fn environ_holds(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|b| *b == 0).any(|kv| kv == entry)
}

/// What one non-blocking look for an ended child found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reaped {
    /// This child ended, with this raw wait status; there may be more.
    Child(i32, i32),
    /// Children remain, none ended.
    Nothing,
    /// No child is left.
    NoChildren,
}

/// The processes of this machine, as the worker layers need them. [`Host`] is the real one;
/// [`fake`] a scripted one for unit tests.
pub(crate) trait Processes {
    /// This process's pid.
    fn me(&self) -> i32;
    fn boot_id(&self) -> String;
    fn stat(&self, pid: i32) -> Option<ProcStat>;
    fn entry(&self, pid: i32) -> Option<ProcEntry>;
    /// Every process, from one look.
    fn table(&self) -> Vec<ProcEntry>;
    /// Its environment (NUL-separated); `None` if it cannot be read.
    fn environ(&self, pid: i32) -> Option<Vec<u8>>;
    fn cwd(&self, pid: i32) -> Option<PathBuf>;
    /// Signal `pid` only if, once pinned (a pidfd), it still passes `still_ours`: a pid reused by
    /// another process in between is never signalled. `Ok(false)`: not signalled (gone, or no
    /// longer ours); a process that ends as it is signalled counts as signalled.
    fn signal_if(&self, pid: i32, sig: Signal, still_ours: &dyn Fn(i32) -> bool) -> std::io::Result<bool>;
    /// Reap one ended child (ours, or an orphan adopted as subreaper) without waiting.
    fn reap(&self) -> Reaped;
    /// Until `pid` (a child not yet reaped) ends, a signal arrives, or `at_most` passes; `false`
    /// if it cannot be waited on (no pidfd), and nothing was waited for.
    fn wait_exit(&self, pid: i32, at_most: Duration) -> bool;
    /// Let `d` pass.
    fn pause(&self, d: Duration);
    fn now(&self) -> Instant;
}

/// Every descendant of `root`, from one look at the process table.
pub(crate) fn descendants(p: &impl Processes, root: i32) -> Vec<i32> {
    descendants_in(&p.table(), root)
}

/// Whether `pid` carries `VAR=value` in its environment.
pub(crate) fn carries(p: &impl Processes, pid: i32, entry: &[u8]) -> bool {
    p.environ(pid).is_some_and(|env| environ_holds(&env, entry))
}

/// This machine, through Linux `/proc`, pidfds and `waitpid`.
#[derive(Default)]
pub(crate) struct Host {
    /// The pidfd [`Processes::wait_exit`] last opened, kept for the same pid.
    waited: std::cell::RefCell<Option<(i32, Option<PidFd>)>>,
}

impl Processes for Host {
    fn me(&self) -> i32 {
        std::process::id() as i32
    }

    fn boot_id(&self) -> String {
        boot_id()
    }

    fn stat(&self, pid: i32) -> Option<ProcStat> {
        proc_stat(pid)
    }

    fn entry(&self, pid: i32) -> Option<ProcEntry> {
        read_entry(pid)
    }

    fn table(&self) -> Vec<ProcEntry> {
        let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter_map(read_entry).collect()
    }

    fn environ(&self, pid: i32) -> Option<Vec<u8>> {
        std::fs::read(format!("/proc/{pid}/environ")).ok()
    }

    fn cwd(&self, pid: i32) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
    }

    fn signal_if(&self, pid: i32, sig: Signal, still_ours: &dyn Fn(i32) -> bool) -> std::io::Result<bool> {
        let Some(fd) = PidFd::open(pid) else { return Ok(false) };
        if !still_ours(pid) {
            return Ok(false);
        }
        fd.signal(sig)?;
        Ok(true)
    }

    fn reap(&self) -> Reaped {
        let mut raw = 0;
        // SAFETY: waitpid with WNOHANG writes only to `raw`.
        let pid = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
        match pid {
            0 => Reaped::Nothing,
            p if p > 0 => Reaped::Child(p, raw),
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) => Reaped::NoChildren,
            _ => Reaped::Nothing,
        }
    }

    fn wait_exit(&self, pid: i32, at_most: Duration) -> bool {
        let mut waited = self.waited.borrow_mut();
        if !matches!(*waited, Some((p, _)) if p == pid) {
            *waited = Some((pid, PidFd::open(pid)));
        }
        match waited.as_ref().and_then(|(_, fd)| fd.as_ref()) {
            Some(fd) => {
                fd.wait_exit(at_most);
                true
            }
            None => false,
        }
    }

    fn pause(&self, d: Duration) {
        std::thread::sleep(d);
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Signal `pid` only if, once pinned by a pidfd, it still passes `still_ours` ([`Host`]'s
/// [`Processes::signal_if`]).
pub(crate) fn signal_if(pid: i32, sig: Signal, still_ours: impl Fn(i32) -> bool) -> std::io::Result<bool> {
    Host::default().signal_if(pid, sig, &still_ours)
}

/// Run `cmd` in a session of its own, so that no terminal signal or group kill of ours
/// reaches it and it outlives a `--once` reconciler.
pub(crate) fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
}

/// A handle on one process that cannot be confused with a later process of the same pid.
pub(crate) struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    pub(crate) fn open(pid: i32) -> Option<PidFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
        // SAFETY: a non-negative return is a fresh fd that we now own.
        (fd >= 0).then(|| PidFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// Until the process ends, a signal arrives, or `at_most` passes.
    pub(crate) fn wait_exit(&self, at_most: Duration) {
        use std::os::fd::AsFd;
        let mut fds = [nix::poll::PollFd::new(self.0.as_fd(), nix::poll::PollFlags::POLLIN)];
        let ms = u16::try_from(at_most.as_millis()).unwrap_or(u16::MAX);
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
    }

    pub(crate) fn signal(&self, sig: Signal) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: the fd is a pidfd we own; a null siginfo means "as kill(2)".
        let r = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), sig as i32, std::ptr::null::<u8>(), 0u32) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        Err(e)
    }
}

/// A scripted process table for unit tests: processes are added and ended by the test, signals
/// are recorded (and a SIGKILL ends its target), children end when the test says, and time
/// passes only when [`Processes::pause`] or [`Processes::wait_exit`] is called.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// One fake process.
    #[derive(Debug, Clone)]
    pub(crate) struct FakeProc {
        pub(crate) ppid: i32,
        pub(crate) stat: ProcStat,
        pub(crate) environ: Vec<u8>,
        pub(crate) cwd: PathBuf,
    }

    #[derive(Default)]
    pub(crate) struct State {
        pub(crate) procs: BTreeMap<i32, FakeProc>,
        /// Every signal sent, in order.
        pub(crate) signals: Vec<(i32, Signal)>,
        /// Children that have ended, to be reaped (pid, raw status), in order.
        pub(crate) ended: Vec<(i32, i32)>,
        /// How long has passed.
        pub(crate) elapsed: Duration,
        pub(crate) boot: String,
    }

    /// What happens as time passes: called at every pause, with the state (its `elapsed` says
    /// how much has passed).
    pub(crate) type Script = Box<dyn FnMut(&mut State)>;

    pub(crate) struct Fake {
        pub(crate) me: i32,
        pub(crate) state: RefCell<State>,
        pub(crate) script: RefCell<Option<Script>>,
        start: Instant,
    }

    impl Fake {
        pub(crate) fn new(me: i32) -> Fake {
            let state = State { boot: "boot-1".into(), ..State::default() };
            Fake { me, state: RefCell::new(state), script: RefCell::new(None), start: Instant::now() }
        }

        /// Add a running process `pid`, child of `ppid`, with `environ` (`NAME=value` entries).
        pub(crate) fn spawn(&self, pid: i32, ppid: i32, start_time: u64, environ: &[&str]) {
            let environ = environ.iter().flat_map(|e| e.bytes().chain([0])).collect();
            let stat = ProcStat { state: 'S', start_time, cpu_ticks: 0 };
            self.state.borrow_mut().procs.insert(pid, FakeProc { ppid, stat, environ, cwd: PathBuf::from("/") });
        }

        /// End `pid` with `raw` wait status: its children are re-parented to [`Fake::me`] (as
        /// to a subreaper), and it waits to be reaped if it is a child of ours.
        pub(crate) fn end(&self, pid: i32, raw: i32) {
            end(&mut self.state.borrow_mut(), self.me, pid, raw);
        }

        pub(crate) fn on_pause(&self, script: impl FnMut(&mut State) + 'static) {
            *self.script.borrow_mut() = Some(Box::new(script));
        }

        pub(crate) fn signals(&self) -> Vec<(i32, Signal)> {
            self.state.borrow().signals.clone()
        }

        pub(crate) fn elapsed(&self) -> Duration {
            self.state.borrow().elapsed
        }
    }

    /// [`Fake::end`] on the state itself (for scripts).
    pub(crate) fn end(s: &mut State, me: i32, pid: i32, raw: i32) {
        let Some(p) = s.procs.get_mut(&pid) else { return };
        if p.stat.ended() {
            return;
        }
        p.stat.state = 'Z';
        let ppid = p.ppid;
        for q in s.procs.values_mut().filter(|q| q.ppid == pid) {
            q.ppid = me;
        }
        if ppid == me {
            s.ended.push((pid, raw));
        }
    }

    impl Processes for Fake {
        fn me(&self) -> i32 {
            self.me
        }

        fn boot_id(&self) -> String {
            self.state.borrow().boot.clone()
        }

        fn stat(&self, pid: i32) -> Option<ProcStat> {
            self.state.borrow().procs.get(&pid).map(|p| p.stat)
        }

        fn entry(&self, pid: i32) -> Option<ProcEntry> {
            self.state.borrow().procs.get(&pid).map(|p| ProcEntry { pid, ppid: p.ppid, zombie: p.stat.ended() })
        }

        fn table(&self) -> Vec<ProcEntry> {
            let s = self.state.borrow();
            s.procs.iter().map(|(&pid, p)| ProcEntry { pid, ppid: p.ppid, zombie: p.stat.ended() }).collect()
        }

        fn environ(&self, pid: i32) -> Option<Vec<u8>> {
            self.state.borrow().procs.get(&pid).map(|p| if p.stat.ended() { Vec::new() } else { p.environ.clone() })
        }

        fn cwd(&self, pid: i32) -> Option<PathBuf> {
            self.state.borrow().procs.get(&pid).map(|p| p.cwd.clone())
        }

        fn signal_if(&self, pid: i32, sig: Signal, still_ours: &dyn Fn(i32) -> bool) -> std::io::Result<bool> {
            if !self.state.borrow().procs.contains_key(&pid) || !still_ours(pid) {
                return Ok(false);
            }
            let mut s = self.state.borrow_mut();
            s.signals.push((pid, sig));
            if sig == Signal::SIGKILL {
                end(&mut s, self.me, pid, libc::SIGKILL);
            }
            Ok(true)
        }

        fn reap(&self) -> Reaped {
            let mut s = self.state.borrow_mut();
            if !s.ended.is_empty() {
                let (pid, raw) = s.ended.remove(0);
                s.procs.remove(&pid);
                return Reaped::Child(pid, raw);
            }
            let me = self.me;
            if s.procs.values().any(|p| p.ppid == me) {
                Reaped::Nothing
            } else {
                Reaped::NoChildren
            }
        }

        fn wait_exit(&self, _pid: i32, at_most: Duration) -> bool {
            self.pause(at_most);
            true
        }

        fn pause(&self, d: Duration) {
            self.state.borrow_mut().elapsed += d;
            if let Some(script) = self.script.borrow_mut().as_mut() {
                script(&mut self.state.borrow_mut());
            }
        }

        fn now(&self) -> Instant {
            self.start + self.state.borrow().elapsed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::Fake;
    use super::*;

    #[test]
    fn descendants_follow_every_generation_and_only_those() {
        let table = [(10, 1), (11, 10), (12, 11), (13, 10), (20, 1), (21, 20)].map(|(pid, ppid)| ProcEntry { pid, ppid, zombie: false });
        let mut d = descendants_in(&table, 10);
        d.sort();
        assert_eq!(d, vec![11, 12, 13]);
        assert!(descendants_in(&table, 12).is_empty());
        // A loop in what /proc reported does not hang the walk.
        let looped = [ProcEntry { pid: 2, ppid: 3, zombie: false }, ProcEntry { pid: 3, ppid: 2, zombie: false }];
        assert_eq!(descendants_in(&looped, 2), vec![3]);
    }

    #[test]
    fn an_environment_entry_is_matched_whole() {
        let env = b"A=1\0GUILD_HALL_RUN_ID=abc\0B=2";
        assert!(environ_holds(env, b"GUILD_HALL_RUN_ID=abc"));
        assert!(!environ_holds(env, b"GUILD_HALL_RUN_ID=ab"));
        assert!(!environ_holds(b"", b"A=1"));
    }

    #[test]
    fn this_process_reads_as_itself() {
        let host = Host::default();
        let me = host.me();
        let stat = host.stat(me).expect("own stat");
        assert!(!stat.ended() && stat.start_time > 0);
        assert!(host.table().iter().any(|e| e.pid == me));
        assert!(!host.boot_id().is_empty());
        assert_eq!(host.cwd(me), std::env::current_dir().ok());
    }

    #[test]
    fn the_fake_reparents_orphans_and_kill_ends_a_process() {
        let f = Fake::new(100);
        f.spawn(101, 100, 1, &["X=1"]);
        f.spawn(102, 101, 2, &[]);
        assert_eq!(f.reap(), Reaped::Nothing);
        f.end(101, 0);
        assert_eq!(f.entry(102).map(|e| e.ppid), Some(100), "adopted by the subreaper");
        assert_eq!(f.reap(), Reaped::Child(101, 0));
        assert!(f.signal_if(102, Signal::SIGKILL, &|_| true).expect("signal"));
        assert_eq!(f.reap(), Reaped::Child(102, libc::SIGKILL));
        assert_eq!(f.reap(), Reaped::NoChildren);
        assert!(!f.signal_if(102, Signal::SIGTERM, &|_| true).expect("signal"), "gone: nothing signalled");
    }
}
