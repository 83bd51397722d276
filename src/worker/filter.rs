//! A package's filter commands (`compact`, `notes`): run to completion, `input` on stdin, the
//! output returned; confined like a worker but with nothing of an attempt (no shim, worktree
//! or mailbox), and killed past [`FILTER_LIMIT`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::worker::sandbox::Policy;
use crate::worker::Package;

/// How long a filter command (`compact`, `notes`) may run.
pub(crate) const FILTER_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Run one of `pkg`'s filter commands: `input` on its stdin, its stdout returned. Confined, it
/// may write only `tmp` (its `TMPDIR`) and the package's `sandbox.write`, and read nothing of
/// the `home` but those and its package.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_filter(
    pkg: &Package,
    argv: &[String],
    cwd: &Path,
    input: &str,
    tmp: &Path,
    confined: bool,
    home: &Path,
    env: &BTreeMap<String, String>,
) -> Result<std::process::Output> {
    use std::process::{Command, Stdio};
    let (prog, args) = argv.split_first().context("empty command")?;
    let mut cmd = Command::new(prog);
    cmd.args(args).current_dir(cwd).envs(env).env("TMPDIR", tmp).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if confined {
        let mut writable = vec![tmp.to_path_buf()];
        let mut written_as = std::collections::BTreeMap::new();
        for (entry, path) in pkg.sandbox_write_entries().map_err(anyhow::Error::msg)? {
            written_as.insert(path.clone(), entry);
            writable.push(path);
        }
        let read = pkg.sandbox_read().map_err(anyhow::Error::msg)?;
        let mut hidden = vec![home.to_path_buf()];
        hidden.extend(crate::worker::sandbox::credential_stores(&read));
        let mut readable = vec![pkg.dir.clone()];
        readable.extend(read.into_iter().filter(|r| !r.starts_with(home)));
        let own = vec![tmp.to_path_buf()];
        Policy { writable, readable, hidden, own, written_as, cluster_client: pkg.cluster_client() }.prepare()?.apply_to(&mut cmd);
    }
    // Its own process group: on timeout the whole group goes, grandchildren too (one holding
    // stdout would otherwise keep us waiting).
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().with_context(|| format!("starting {prog}"))?;
    // Fed from a thread: a command that prints before it has read everything never blocks us.
    let mut stdin = child.stdin.take().context("no stdin")?;
    let input = input.to_string();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
    let pid = child.id() as i32;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = done_tx.send(());
        out
    });
    if done_rx.recv_timeout(FILTER_LIMIT).is_err() {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let out = waiter.join().map_err(|_| anyhow::anyhow!("{prog}: waiting for it failed"))??;
    let _ = feeder.join();
    Ok(out)
}
