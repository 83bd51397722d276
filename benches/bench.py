#!/usr/bin/env python3
"""guild-hall benchmarks (issues 2, 3 and 10).
Run: python3 benches/bench.py [--quick] [--no-build] [--only-watch [--baseline BIN] | --only-confinement | --only-parse
                               | --only-meetings | --only-waves | --only-dispatch [--baseline BIN]
                               | --only-throughput [--baseline BIN] | --only-scaling [--baseline BIN]
                               | --only-finish [--baseline BIN]
                               | --only-deps [--baseline BIN] [--baseline-n N] [--baseline-timeout SECS]
                               | --only-settled [--baseline BIN]
                               | --only-long-watch [--baseline BIN] [--at-rest N]]
GUILD_HALL_BENCH_BIN=PATH measures that build instead of this checkout's release build.
GUILD_HALL_BENCH_TMP=DIR puts the benchmarks using --baseline's helper in DIR (a tmpfs, say).

1. `reconcile --once --dry-run` over 10,000 settled commission artifacts, next to
   `grep -rl '^status: pending' .lore/commissions` on the same tree: wall time (median of 5)
   and the peak RSS of guild-hall.
2. One full dispatch (branch + worktree + spawn of the worker) in a repository with 10,000
   tracked files, sparse and full checkout, next to `git worktree add` on the same repository.

Everything happens in a temp dir with its own GUILD_HALL_HOME. Prints a markdown table.
"""
import json
import os, resource, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The build measured: this checkout's release build, or another one named by GUILD_HALL_BENCH_BIN
# (to run a benchmark that has no --baseline of its own against an older build).
BIN = os.environ.get("GUILD_HALL_BENCH_BIN") or os.path.join(ROOT, "target", "release", "guild-hall")
RUNS = 3 if "--quick" in sys.argv else 5
N = 10_000
ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")


def run(cmd, cwd, env=None, check=True):
    """Run a command in a fresh child; return (seconds, peak RSS of that child in MB)."""
    r = subprocess.run(["python3", "-c", CHILD, *cmd], cwd=cwd, env=env or ENV, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"{cmd} failed: {r.stdout}{r.stderr}")
    secs, rss = r.stdout.strip().splitlines()[-1].split()
    return float(secs), float(rss) / 1024


# Measured in a child python so ru_maxrss belongs to that one command only.
CHILD = """
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
dt = time.perf_counter() - t
if p.returncode not in (0, 1): sys.stderr.write(p.stderr.decode()); sys.exit(p.returncode)
print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def new_repo(path, files=0):
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Bench")
    git(path, "config", "user.email", "bench@example.com")
    with open(os.path.join(path, "README.md"), "w") as f:
        f.write("bench\n")
    for i in range(files):
        d = os.path.join(path, "src", f"m{i // 100:03}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:05}.txt"), "w") as f:
            f.write(f"file {i}\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")


def script_worker(repo, name, script, checkout="sparse", extra=""):
    """A worker package `name` in `repo` whose command is `./run.sh`, holding `script` (its
    lines after the shebang); `extra`: more lines of worker.yaml."""
    wd = os.path.join(repo, ".lore", "workers", name)
    os.makedirs(wd)
    with open(os.path.join(wd, "worker.yaml"), "w") as f:
        f.write(f"name: {name}\ncommand: ['./run.sh']\ncheckout: {checkout}\n{extra}")
    with open(os.path.join(wd, "run.sh"), "w") as f:
        f.write(f"#!/bin/sh\n{script}\n")
    os.chmod(os.path.join(wd, "run.sh"), 0o755)


def median(xs):
    return statistics.median(xs)


def bench_dry_run(tmp):
    repo = os.path.join(tmp, "settled")
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home1"))
    settled_tree(repo, N, env)
    grep_t, _ = zip(*[run(["grep", "-rl", "^status: pending", ".lore/commissions"], repo) for _ in range(RUNS)])
    gh = [run([BIN, "reconcile", "--once", "--dry-run"], repo, env) for _ in range(RUNS)]
    gh_t, gh_rss = zip(*gh)
    return median(grep_t), median(gh_t), max(gh_rss)


def settled_tree(repo, n, env):
    """A project of `n` settled commissions (completed, failed, cancelled in turn)."""
    new_repo(repo)
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    os.makedirs(os.path.join(repo, ".lore/workers/scribe"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "examples/workers/scribe/worker.yaml"), os.path.join(repo, ".lore/workers/scribe/"))
    d = os.path.join(repo, ".lore", "commissions")
    for i in range(n):
        status = ("completed", "failed", "cancelled")[i % 3]
        with open(os.path.join(d, f"c{i:05}.md"), "w") as f:
            f.write(
                f"---\ntitle: Commission {i}\ndate: 2026-11-22\nstatus: {status}\nworker: scribe\n"
                f"created: 2026-11-22T10:00:00.000Z\nattempt: 1\nbranch: claude/commission/c{i:05}\n"
                f"progress: done\nresult:\n  summary: Finished item {i}\n  artifacts: [.lore/out/{i}.md]\n"
                f"---\nDo item {i} and verify it.\n"
            )


def bench_scaling(tmp, builds, sizes=(1_000, 10_000, 50_000)):
    """P10: `reconcile --once --dry-run` over 1,000, 10,000 and 50,000 settled commissions,
    each build and grep taking turns: wall (median) and peak RSS."""
    rows = []
    for n in sizes:
        repo = os.path.join(tmp, f"scale-{n}")
        env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, f"home-scale-{n}"))
        settled_tree(repo, n, env)
        times = {who: [] for who, _ in builds}
        rss = {who: 0.0 for who, _ in builds}
        greps = []
        for _ in range(RUNS):
            greps.append(run(["grep", "-rl", "^status: pending", ".lore/commissions"], repo)[0])
            for who, binary in builds:
                t, r = run([binary, "reconcile", "--once", "--dry-run"], repo, env)
                times[who].append(t)
                rss[who] = max(rss[who], r)
        g = median(greps)
        for who, _ in builds:
            rows.append((n, who, median(times[who]), rss[who], g))
        shutil.rmtree(repo, ignore_errors=True)
    return rows


def bench_settled_against(tmp, baseline):
    """P1 side by side: `reconcile --once --dry-run` over the settled tree of bench_dry_run,
    this build and `baseline` (an older build) taking turns, so both see the same machine."""
    repo = os.path.join(tmp, "settled")
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home1"))
    ours, theirs = [], []
    for _ in range(RUNS):
        ours.append(run([BIN, "reconcile", "--once", "--dry-run"], repo, env))
        theirs.append(run([baseline, "reconcile", "--once", "--dry-run"], repo, env))
    return median([t for t, _ in ours]), max(r for _, r in ours), median([t for t, _ in theirs]), max(r for _, r in theirs)


def bench_status(tmp):
    """`status --json` over the settled tree of bench_dry_run: time and peak RSS (streamed)."""
    repo = os.path.join(tmp, "settled")
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home1"))
    out = subprocess.run([BIN, "status", "--json"], cwd=repo, env=env, capture_output=True, check=False).stdout
    rows = len(json.loads(out))
    runs = [run([BIN, "status", "--json"], repo, env) for _ in range(RUNS)]
    t, rss = zip(*runs)
    return rows, median(t), max(rss)


def bench_dispatch(tmp, builds=None, modes=("sparse", "full")):
    """P4: one `reconcile --once` that dispatches (branch, worktree, shim, worker seen running)
    in a repository of 10,000 tracked files, each build in `builds` and the plain git commands
    taking turns, `sync` before each."""
    builds = builds or [("this build", BIN)]
    repo = os.path.join(tmp, "big")
    new_repo(repo, files=N)
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home2"))
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    for name, checkout in (("waiter-sparse", "sparse"), ("waiter-full", "full")):
        wd = os.path.join(repo, ".lore", "workers", name)
        os.makedirs(wd)
        with open(os.path.join(wd, "worker.yaml"), "w") as f:
            f.write(f"name: {name}\ncommand: [sleep, '600']\ncheckout: {checkout}\n")
    with open(os.path.join(repo, ".lore", "guild-hall.yaml"), "w") as f:
        f.write("commission_cap: 100\n")
    ours = {(who, mode): [] for who, _ in builds for mode in modes}
    plain = {mode: [] for mode in modes}
    for i in range(RUNS):
        for mode in modes:
            for who, binary in builds:
                cid = f"{mode}-{who.replace(' ', '')}-{i}"
                with open(os.path.join(repo, ".lore/commissions", f"{cid}.md"), "w") as f:
                    f.write(f"---\nworker: waiter-{mode}\n---\nWait.\n")
                subprocess.run(["sync"])
                # One pass: stamp, dispatch (branch + worktree + spawn), see it running.
                ours[(who, mode)].append(run([binary, "reconcile", "--once"], repo, env)[0])
                # Cancel and clean up outside the measurement.
                subprocess.run([BIN, "commission", "cancel", cid], cwd=repo, env=env, check=True, capture_output=True)
                subprocess.run([BIN, "reconcile", "--once", "--wait", "--timeout", "120s"], cwd=repo, env=env, check=True, capture_output=True)
            path = os.path.join(tmp, f"plain-{mode}-{i}")
            if mode == "full":
                script = f"git worktree add -q -b plain-{mode}/{i} {path} claude/main"
            else:
                script = (f"git worktree add -q --no-checkout -b plain-{mode}/{i} {path} claude/main && "
                          f"git -C {path} sparse-checkout set --no-cone /.lore/ && git -C {path} checkout -q plain-{mode}/{i}")
            subprocess.run(["sync"])
            plain[mode].append(run(["sh", "-c", script], repo)[0])
        subprocess.run([BIN, "reconcile", "--once", "--wait", "--timeout", "120s"], cwd=repo, env=env, capture_output=True)
    if builds == [("this build", BIN)] and modes == ("sparse", "full"):
        return median(ours[("this build", "sparse")]), median(ours[("this build", "full")]), median(plain["sparse"]), median(plain["full"])
    return {k: median(v) for k, v in ours.items()}, {k: median(v) for k, v in plain.items()}


def start_watch(env, dirs, log):
    return subprocess.Popen([BIN, "watch", *dirs], env=env, stdout=subprocess.DEVNULL, stderr=log)


def proc_cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def proc_hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_state(*roots):
    """(path, mtime_ns, size) of every file under the roots: to count writes at rest."""
    out = set()
    for root in roots:
        for d, _, files in os.walk(root):
            for n in files:
                p = os.path.join(d, n)
                try:
                    st = os.stat(p)
                except FileNotFoundError:
                    continue
                out.add((p, st.st_mtime_ns, st.st_size))
    return out


def marked_project(tmp, tag, binary):
    """A project set up by `binary` under `tmp` for a reaction benchmark: its repository, home,
    environment, and the directory its worker writes its timing marks into."""
    repo = os.path.join(tmp, tag)
    new_repo(repo)
    home = os.path.join(tmp, f"home-{tag}")
    env = dict(ENV, GUILD_HALL_HOME=home)
    subprocess.run([binary, "init"], cwd=repo, env=env, check=True, capture_output=True)
    marks = os.path.join(tmp, f"marks-{tag}")
    os.makedirs(marks)
    return repo, home, env, marks


def bench_watch_latency(tmp, runs, pause, binary=None, tag="lat"):
    """Edit-to-spawn (P2): the rename that makes a commission pending, to the worker's first
    instruction. `pause`: seconds of quiet before each edit (the honest case: the watcher is
    asleep, not riding a pass the previous edit caused); 0 for edits back to back."""
    binary = binary or BIN
    repo, home, env, marks = marked_project(tmp, tag, binary)
    wd = os.path.join(repo, ".lore/workers/stamp")
    os.makedirs(wd)
    # The worker writes its timing mark outside its worktree: the package says so (confinement
    # refuses any other write there).
    with open(os.path.join(wd, "worker.yaml"), "w") as f:
        f.write(f"name: stamp\ncheckout: sparse\nsandbox: {{write: [{marks}]}}\n"
                "command: [sh, -c, 'date +%s%N > " + marks + "/$GUILD_HALL_COMMISSION; exec sleep 600']\n")
    log = open(os.path.join(tmp, f"watch-{tag}.log"), "w")
    w = subprocess.Popen([binary, "watch", repo], env=env, stdout=subprocess.DEVNULL, stderr=log)
    time.sleep(1.0)
    lat = []
    d = os.path.join(repo, ".lore/commissions")
    try:
        for i in range(runs):
            cid = f"l{i:03}"
            tmpf = os.path.join(d, f".{cid}.md.swp")
            with open(tmpf, "w") as f:
                f.write("---\nworker: stamp\nstatus: pending\n---\nGo.\n")
            time.sleep(pause)
            t0 = time.time_ns()
            os.rename(tmpf, os.path.join(d, f"{cid}.md"))
            mark = os.path.join(marks, cid)
            deadline = time.time() + 30
            while not (os.path.exists(mark) and os.path.getsize(mark) > 0):
                if time.time() > deadline:
                    log.flush()
                    sys.exit(f"worker {cid} never started\n" + open(os.path.join(tmp, f"watch-{tag}.log")).read()[-3000:])
                time.sleep(0.001)
            with open(mark) as f:
                lat.append((int(f.read().strip()) - t0) / 1e6)
            # Cancel, and wait until it is cleaned up, outside the measurement.
            subprocess.run([binary, "commission", "cancel", cid], cwd=repo, env=env, check=True, capture_output=True)
            wt = os.path.join(home, "worktrees")
            deadline = time.time() + 60
            while any(n.startswith("commission-") for p in os.listdir(wt) for n in os.listdir(os.path.join(wt, p))):
                if time.time() > deadline:
                    log.flush()
                    tail = open(os.path.join(tmp, f"watch-{tag}.log")).read()[-3000:]
                    art = open(os.path.join(d, f"{cid}.md")).read()
                    sys.exit(f"cleanup of {cid} never finished\n{art}\n{tail}")
                time.sleep(0.01)
    finally:
        w.terminate()
        w.wait()
    lat.sort()
    return statistics.median(lat), lat[max(0, int(len(lat) * 0.95) - 1)]


def at_rest_history(repo, n):
    """`n` ended plans (completed, one landed task each) and `n` closed meetings, as another
    home or an earlier watch left them: the first pass records each (taken from its file), and
    from then on a pass has nothing to do for them."""
    for kind in ("plans", "meetings"):
        os.makedirs(os.path.join(repo, ".lore", kind), exist_ok=True)
    for i in range(n):
        with open(os.path.join(repo, ".lore/plans", f"p{i:04}.md"), "w") as f:
            f.write(f"---\ntitle: Plan {i}\nstatus: completed\nwave: 1\ntasks:\n  p{i:04}:exec:wave-1:task-1: integrated\n"
                    f"waves:\n  - - {{id: t, worker: stamp, prompt: \"item {i}\"}}\n---\n")
        with open(os.path.join(repo, ".lore/meetings", f"m{i:04}.md"), "w") as f:
            f.write(f"---\nworker: stamp\nstatus: closed\n---\nWe met about item {i}.\n")


def recorded(home, kind):
    """How many artifacts of `kind` (`plans`, `meetings`) the home holds a record of."""
    state = os.path.join(home, "state")
    n = 0
    for p in os.listdir(state) if os.path.isdir(state) else []:
        d = os.path.join(state, p, kind)
        n += sum(os.path.exists(os.path.join(d, a, "record.json")) for a in os.listdir(d)) if os.path.isdir(d) else 0
    return n


def bench_long_watch(tmp, n, binary, tag="long", at_rest=0):
    """The reaction to an edit under one long `watch`: `n` commissions created one at a time
    (a vim-style rename into place), each finishing (its worker writes a file and submits; the
    watch merges it and removes its worktree) before the next. Returns each reaction: the
    rename to the worker's first instruction (`date +%s%N` it writes), in ms, in order; and
    the CPU time the watch process spent over each (its threads' schedstat, in ms: what the
    reaction costs, whatever else shares the cores). `at_rest`: ended plans and closed
    meetings in the project's history besides ([`at_rest_history`]), recorded before the first
    commission."""
    repo, home, env, marks = marked_project(tmp, tag, binary)
    script_worker(repo, "stamp", f'date +%s%N > {marks}/$GUILD_HALL_COMMISSION\n'
                  'echo "$GUILD_HALL_COMMISSION" > "out-$GUILD_HALL_COMMISSION.txt"\n'
                  'exec "$GUILD_HALL_BIN" toolbox submit-result --summary done',
                  checkout="full", extra=f"sandbox: {{write: [{marks}]}}\n")
    at_rest_history(repo, at_rest)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "worker")
    log = open(os.path.join(tmp, f"watch-{tag}.log"), "w")
    w = subprocess.Popen([binary, "watch", repo], env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while recorded(home, "plans") < at_rest or recorded(home, "meetings") < at_rest:
        if time.time() > deadline:
            sys.exit("the history was never recorded\n" + open(os.path.join(tmp, f"watch-{tag}.log")).read()[-3000:])
        time.sleep(0.05)
    time.sleep(1.0)
    lat, cpu = [], []
    d = os.path.join(repo, ".lore/commissions")
    wt = os.path.join(home, "worktrees")
    try:
        for i in range(n):
            cid = f"w{i:03}"
            tmpf = os.path.join(d, f".{cid}.md.swp")
            with open(tmpf, "w") as f:
                f.write(f"---\nworker: stamp\nstatus: pending\n---\nWrite {cid}.\n")
            time.sleep(0.5)
            c0 = proc_cpu_ns(w.pid)
            t0 = time.time_ns()
            os.rename(tmpf, os.path.join(d, f"{cid}.md"))
            mark = os.path.join(marks, cid)
            deadline = time.time() + 30
            while not (os.path.exists(mark) and os.path.getsize(mark) > 0):
                if time.time() > deadline:
                    sys.exit(f"worker {cid} never started\n" + open(os.path.join(tmp, f"watch-{tag}.log")).read()[-3000:])
                time.sleep(0.001)
            with open(mark) as f:
                lat.append((int(f.read().strip()) - t0) / 1e6)
            cpu.append((proc_cpu_ns(w.pid) - c0) / 1e6)
            # Finished (completed, merged, worktree gone), outside the measurement.
            deadline = time.time() + 60
            while True:
                done = "status: completed" in open(os.path.join(d, f"{cid}.md")).read()
                busy = os.path.isdir(wt) and any(n.startswith("commission-") for p in os.listdir(wt) for n in os.listdir(os.path.join(wt, p)))
                if done and not busy:
                    break
                if time.time() > deadline:
                    tail = open(os.path.join(tmp, f"watch-{tag}.log")).read()[-3000:]
                    sys.exit(f"{cid} never finished\n{open(os.path.join(d, f'{cid}.md')).read()}\n{tail}")
                time.sleep(0.01)
    finally:
        w.terminate()
        w.wait()
    return lat, cpu


def proc_cpu_ns(pid):
    """CPU time of every thread of `pid` so far, in ns (schedstat: finer than the tick)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(len(xs) * p / 100.0 + 0.5)) - 1))]


def proc_wakeups(pid):
    """Context switches of every thread of `pid` so far: each wake-up of a sleeping thread is one."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                total += sum(int(l.split()[1]) for l in f if "ctxt_switches:" in l)
        except FileNotFoundError:
            pass
    return total


def idle_projects(tmp, env):
    """Two projects with 5,000 settled commissions each (made once, shared by every build)."""
    repos = []
    for name in ("idle-a", "idle-b"):
        repo = os.path.join(tmp, name)
        repos.append(repo)
        if os.path.exists(repo):
            continue
        new_repo(repo)
        subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
        d = os.path.join(repo, ".lore", "commissions")
        for i in range(N // 2):
            status = ("completed", "failed", "cancelled")[i % 3]
            with open(os.path.join(d, f"c{i:05}.md"), "w") as f:
                f.write(f"---\ntitle: C {i}\nstatus: {status}\nworker: scribe\ncreated: 2026-11-22T10:00:00.000Z\nattempt: 1\n"
                        f"result:\n  summary: Finished {i}\n  artifacts: []\n---\nDo item {i}.\n")
    return repos


def bench_watch_idle(tmp, seconds, binary=None):
    """Idle cost (P3): two projects with 5,000 settled commissions each, at rest: CPU, thread
    wake-ups (context switches), peak RSS, files written. The window holds one resync."""
    binary = binary or BIN
    home = os.path.join(tmp, "home-idle")
    env = dict(ENV, GUILD_HALL_HOME=home)
    repos = idle_projects(tmp, env)
    log = open(os.path.join(tmp, "watch-idle.log"), "w")
    w = subprocess.Popen([binary, "watch", *repos], env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        time.sleep(5)  # startup passes
        before_files = tree_state(*[os.path.join(r, ".lore") for r in repos], home)
        t0, c0, s0 = time.time(), proc_cpu_ticks(w.pid), proc_wakeups(w.pid)
        time.sleep(seconds)
        t1, c1, s1 = time.time(), proc_cpu_ticks(w.pid), proc_wakeups(w.pid)
        after_files = tree_state(*[os.path.join(r, ".lore") for r in repos], home)
        hwm = proc_hwm_mb(w.pid)
    finally:
        w.terminate()
        w.wait()
    hz = os.sysconf("SC_CLK_TCK")
    cpu_pct = (c1 - c0) / hz / (t1 - t0) * 100
    return cpu_pct, hwm, len(after_files ^ before_files), seconds, (s1 - s0) / (t1 - t0)


def bench_confinement(tmp, runs):
    """The cost of confinement: the same worker package with and without `sandbox: off`,
    interleaved in the same run. (1) One reconcile pass that dispatches a `sleep 600` worker
    (sparse): branch, worktree, records, shim, Landlock ruleset, spawn. (2) A whole commission,
    `reconcile --once --wait` from pending to merged, for a worker that submits at once."""
    repo = os.path.join(tmp, "confine")
    new_repo(repo, files=100)
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home-confine"))
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    for sandbox in ("confined", "off"):
        extra = "sandbox: off\n" if sandbox == "off" else ""
        for kind, cmd in (("wait", "[sleep, '600']"), ("quick", "['./run.sh']")):
            wd = os.path.join(repo, ".lore", "workers", f"{kind}-{sandbox}")
            os.makedirs(wd)
            with open(os.path.join(wd, "worker.yaml"), "w") as f:
                f.write(f"name: {kind}-{sandbox}\ncommand: {cmd}\ncheckout: sparse\n{extra}")
            with open(os.path.join(wd, "run.sh"), "w") as f:
                f.write('#!/bin/sh\nmkdir -p .lore/out && echo done > ".lore/out/$GUILD_HALL_COMMISSION.md"\n'
                        '"$GUILD_HALL_BIN" toolbox submit-result --summary done --artifact ".lore/out/$GUILD_HALL_COMMISSION.md"\n')
            os.chmod(os.path.join(wd, "run.sh"), 0o755)
    with open(os.path.join(repo, ".lore", "guild-hall.yaml"), "w") as f:
        f.write("commission_cap: 100\ncancel_grace: 1s\n")
    dispatch = {"confined": [], "off": []}
    whole = {"confined": [], "off": []}
    for i in range(runs):
        for sandbox in ("confined", "off"):
            cid = f"wait-{sandbox}-{i}"
            with open(os.path.join(repo, ".lore/commissions", f"{cid}.md"), "w") as f:
                f.write(f"---\nworker: wait-{sandbox}\n---\nWait.\n")
            subprocess.run(["sync"])
            dispatch[sandbox].append(run([BIN, "reconcile", "--once"], repo, env)[0])
            subprocess.run([BIN, "commission", "cancel", cid], cwd=repo, env=env, check=True, capture_output=True)
            subprocess.run([BIN, "reconcile", "--once", "--wait", "--timeout", "120s"], cwd=repo, env=env, check=True, capture_output=True)
            cid = f"quick-{sandbox}-{i}"
            with open(os.path.join(repo, ".lore/commissions", f"{cid}.md"), "w") as f:
                f.write(f"---\nworker: quick-{sandbox}\n---\nDo it.\n")
            subprocess.run(["sync"])
            whole[sandbox].append(run([BIN, "reconcile", "--once", "--wait", "--timeout", "120s"], repo, env)[0])
    return {k: (median(dispatch[k]), median(whole[k])) for k in dispatch}


def bench_odd_frontmatter(tmp, runs):
    """`guild-hall check` on a project holding one pathological artifact each, near or over the
    frontmatter bounds (64 KiB, flow depth 32): the time one odd file can cost a pass."""
    cases = {
        "100 KB of '[' (refused: too large)": "title: " + "[" * 100_000,
        "5,000 nested '[' within 64 KiB (refused: too deep)": "title: " + "[" * 5_000,
        "depth 32, repeated to 60 KiB": "title: " + ("[" * 32 + "]" * 32 + ", ") * 900,
        "2,000 flat keys (60 KiB)": "\n".join(f"key{i:04}: value {i} " + "x" * 10 for i in range(2_000)),
        "one 60 KiB string": "title: '" + "x" * 60_000 + "'",
        "aliases: 9 levels of 9 references": "\n".join(
            ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
            + [f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 9) + "]" for i in range(1, 9)]
        ),
    }
    out = {}
    for n, (label, yaml) in enumerate(cases.items()):
        repo = os.path.join(tmp, f"odd-{n}")
        new_repo(repo)
        env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, f"home-odd-{n}"))
        subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
        with open(os.path.join(repo, ".lore/commissions/odd.md"), "w") as f:
            f.write(f"---\nworker: scribe\n{yaml}\n---\nbody\n")
        out[label] = median([run([BIN, "check"], repo, env, check=False)[0] for _ in range(runs)])
    return out


def bench_meetings(tmp, turns, cycles):
    """Meetings (issue 8): a turn's overhead, and open and close on a 10,000-file repository.

    Overhead: from `meeting send` starting to the first text_delta on its stdout, minus the
    worker's own time to that event. The worker prints its first event as its first act (one
    `date` and a printf in sh, timed on its own and subtracted), so what remains is
    guild-hall's: the CLI, the checks, the system prompt, the shim and the sandbox, the read.
    """
    repo = os.path.join(tmp, "meet")
    new_repo(repo, files=N)
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home-meet"))
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    for name, checkout in (("quick", "sparse"), ("quick-full", "full")):
        wd = os.path.join(repo, ".lore", "workers", name)
        os.makedirs(wd)
        with open(os.path.join(wd, "worker.yaml"), "w") as f:
            f.write(f"name: {name}\ncommand: ['./meet.sh']\nmeeting: ['./meet.sh']\ncheckout: {checkout}\ncapabilities: [meeting]\n")
        with open(os.path.join(wd, "meet.sh"), "w") as f:
            # The clock first, printed at once: the worker's own time to its first event is
            # one `date` (measured apart below and subtracted).
            f.write("#!/bin/sh\nprintf '{\"type\":\"text_delta\",\"text\":\"%s\"}\\n' \"$(date +%s%N)\"\nprintf '{\"type\":\"turn_end\"}\\n'\n")
        os.chmod(os.path.join(wd, "meet.sh"), 0o755)
    with open(os.path.join(repo, ".lore", "guild-hall.yaml"), "w") as f:
        f.write("meeting_cap: 100\n")
    subprocess.run([BIN, "meeting", "start", "--worker", "quick", "--id", "m"], cwd=repo, env=env, check=True, capture_output=True)
    # The worker's own time to its first event: a `date` and a printf in sh.
    own = []
    for _ in range(turns):
        t = time.perf_counter()
        subprocess.run(["sh", "-c", "printf '%s\\n' \"$(date +%s%N)\""], capture_output=True)
        own.append(time.perf_counter() - t)
    own_t = median(own)
    first, whole = [], []
    for i in range(turns):
        t0 = time.perf_counter()
        p = subprocess.Popen([BIN, "meeting", "send", "m", f"turn {i}", "--json"], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in p.stdout:
            if '"text_delta"' in line:
                first.append(time.perf_counter() - t0 - own_t)
                break
        p.wait()
        whole.append(time.perf_counter() - t0)
    first.sort()
    p95 = first[min(len(first) - 1, int(len(first) * 0.95))]
    opens, closes, plain_open, plain_close = [], [], [], []
    for i in range(cycles):
        mid = f"full-{i}"
        subprocess.run(["sync"])
        opens.append(run([BIN, "meeting", "start", "--worker", "quick-full", "--id", mid], repo, env)[0])
        # Something to land: one new file in the worktree.
        wt = os.path.join(env["GUILD_HALL_HOME"], "worktrees")
        wt = os.path.join(wt, os.listdir(wt)[0], f"meeting-{mid}")
        os.makedirs(os.path.join(wt, ".lore"), exist_ok=True)
        with open(os.path.join(wt, ".lore", f"{mid}.md"), "w") as f:
            f.write("notes\n")
        subprocess.run(["sync"])
        closes.append(run([BIN, "meeting", "close", mid], repo, env)[0])
        path = os.path.join(tmp, f"plain-meet-{i}")
        subprocess.run(["sync"])
        plain_open.append(run(["sh", "-c", f"git branch plain-meet/{i} claude/main && git worktree add -q {path} plain-meet/{i}"], repo)[0])
        with open(os.path.join(path, f"plain-{i}.md"), "w") as f:
            f.write("notes\n")
        subprocess.run(["sync"])
        plain_close.append(run(["sh", "-c", f"git -C {path} add -A && git -C {path} commit -q -m leftovers && git worktree remove {path}"], repo)[0])
    return median(first), p95, median(whole), own_t, median(opens), median(closes), median(plain_open), median(plain_close)


def bench_throughput(tmp, runs, builds, n=100, cap=20, secs=1.0):
    """P9: `n` commissions whose worker takes `secs` and submits, at commission_cap and
    max_concurrent_commissions `cap`, from all pending to all completed, under `reconcile
    --wait` and under `watch`; the builds take turns. Ideal: n / cap * secs."""
    out = {}
    for r in range(runs):
        for who, binary in builds:
            for how in ("reconcile --wait", "watch"):
                tag = f"tp-{r}-{who.replace(' ', '')}-{how.split()[0]}"
                repo = os.path.join(tmp, tag)
                new_repo(repo)
                home = os.path.join(tmp, f"home-{tag}")
                os.makedirs(home)
                with open(os.path.join(home, "config.yaml"), "w") as f:
                    f.write(f"max_concurrent_commissions: {cap}\n")
                env = dict(ENV, GUILD_HALL_HOME=home)
                subprocess.run([binary, "init"], cwd=repo, env=env, check=True, capture_output=True)
                script_worker(repo, "nap", f'sleep {secs}\nexec "$GUILD_HALL_BIN" toolbox submit-result --summary done')
                with open(os.path.join(repo, ".lore", "guild-hall.yaml"), "w") as f:
                    f.write(f"commission_cap: {cap}\n")
                git(repo, "add", "-A")
                git(repo, "commit", "-q", "-m", "worker")
                d = os.path.join(repo, ".lore", "commissions")
                for i in range(n):
                    with open(os.path.join(d, f".c{i:03}.tmp"), "w") as f:
                        f.write(f"---\nworker: nap\ncreated: 2026-11-28T00:00:{i // 10:02}.{i % 10}00Z\n---\nNap.\n")
                subprocess.run(["sync"])
                t0 = time.perf_counter()
                for i in range(n):
                    os.rename(os.path.join(d, f".c{i:03}.tmp"), os.path.join(d, f"c{i:03}.md"))
                if how == "watch":
                    log = open(os.path.join(tmp, f"{tag}.log"), "w")
                    w = subprocess.Popen([binary, "watch", repo], env=env, stdout=subprocess.DEVNULL, stderr=log)
                    try:
                        deadline = time.time() + 300
                        while True:
                            texts = [open(os.path.join(d, f"c{i:03}.md")).read() for i in range(n)]
                            if all("status: completed" in t for t in texts):
                                break
                            if time.time() > deadline:
                                sys.exit(f"{who} watch: not all completed")
                            time.sleep(0.02)
                    finally:
                        w.terminate()
                        w.wait()
                else:
                    subprocess.run([binary, "reconcile", "--wait", "--timeout", "300s"], cwd=repo, env=env, check=True, capture_output=True)
                took = time.perf_counter() - t0
                texts = [open(os.path.join(d, f"c{i:03}.md")).read() for i in range(n)]
                if not all("status: completed" in t for t in texts):
                    sys.exit(f"{who} {how}: not all completed")
                out.setdefault((who, how), []).append(took)
                shutil.rmtree(repo, ignore_errors=True)
                shutil.rmtree(home, ignore_errors=True)
    ideal = n / cap * secs
    return {k: median(v) for k, v in out.items()}, ideal


def bench_finish(tmp, runs, builds, changed=100):
    """P11: the pass that finishes a commission whose worker (full checkout) changed `changed`
    of N tracked files and exited: commit its leftovers, squash-merge onto claude/main, remove
    the worktree (`reconcile --once`, after the worker has exited). Beside it, the same change
    by hand: `git add -A` + `commit` in a worktree, `merge --squash` + `commit`."""
    repo = os.path.join(tmp, "finish")
    new_repo(repo, files=N)
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home-finish"))
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    # It starts its work when the bench says so (a `.go` in its worktree): the pass that
    # dispatched it has ended by then, and the next one is the finish measured.
    script_worker(repo, "edit", 'while [ ! -f .go ]; do sleep 0.02; done\nrm .go\n'
                  f'for f in $(git ls-files src | head -n {changed}); do echo "$GUILD_HALL_COMMISSION" >> $f; done\n'
                  'exec "$GUILD_HALL_BIN" toolbox submit-result --summary done', checkout="full")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "worker")
    subprocess.run([BIN, "sync"], cwd=repo, env=env, capture_output=True)
    ours = {who: [] for who, _ in builds}
    plain = []
    state = os.path.join(env["GUILD_HALL_HOME"], "state")
    for i in range(runs):
        for who, binary in builds:
            cid = f"f{i}-{who.replace(' ', '')}"
            with open(os.path.join(repo, ".lore/commissions", f"{cid}.md"), "w") as f:
                f.write("---\nworker: edit\n---\nEdit.\n")
            subprocess.run([binary, "reconcile", "--once"], cwd=repo, env=env, check=True, capture_output=True)
            wts = os.path.join(env["GUILD_HALL_HOME"], "worktrees")
            open(os.path.join(wts, os.listdir(wts)[0], f"commission-{cid}", ".go"), "w").close()
            deadline = time.time() + 120
            while not os.path.exists(os.path.join(state, os.listdir(state)[0], "commissions", cid, "exit.json")):
                if time.time() > deadline:
                    sys.exit(f"{cid}: the worker never ended")
                time.sleep(0.05)
            subprocess.run(["sync"])
            # Up to claude/main moving (the merge), and the whole pass (the worktree's removal
            # after it).
            ref = os.path.join(repo, ".git", "refs", "heads", "claude", "main")
            before = open(ref).read()
            t0 = time.perf_counter()
            proc = subprocess.Popen([binary, "reconcile", "--once"], cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while open(ref).read() == before:
                if proc.poll() is not None and open(ref).read() == before:
                    sys.exit(f"{cid}: the pass ended without moving claude/main")
                time.sleep(0.0005)
            moved = time.perf_counter() - t0
            proc.wait()
            ours[who].append((moved, time.perf_counter() - t0))
            art = open(os.path.join(repo, ".lore/commissions", f"{cid}.md")).read()
            if "status: completed" not in art:
                sys.exit(f"{cid} did not complete:\n{art}")
        path = os.path.join(tmp, f"plain-finish-{i}")
        subprocess.run(["git", "worktree", "add", "-q", "-b", f"plain-finish/{i}", path, "claude/main"], cwd=repo, env=ENV, check=True, capture_output=True)
        subprocess.run(["sh", "-c", f"for f in $(git ls-files src | head -n {changed}); do echo p{i} >> $f; done"], cwd=path, check=True)
        subprocess.run(["sync"])
        script = (f"git -C {path} add -A && git -C {path} commit -q -m work && git -C {path} checkout -q --detach claude/main && "
                  f"git -C {path} merge -q --squash plain-finish/{i} && git -C {path} commit -q -m squash")
        plain.append(run(["sh", "-c", script], repo)[0])
    return {who: (median([m for m, _ in v]), median([w for _, w in v])) for who, v in ours.items()}, median(plain)


def bench_waves(tmp, runs):
    """Plans (issue 9): the copy-back of a task changing 1,000 files in a 10,000-file
    repository, next to `git diff --binary | git apply --index` + `git commit` of the same
    change; and a wave of 20 trivial tasks (0.5 s each) at parallelism 4 against the ideal."""
    repo = os.path.join(tmp, "waves")
    new_repo(repo, files=N)
    env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home-waves"))
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    change = "for f in $(git ls-files src | head -n 1000); do echo changed >> $f; done"
    script_worker(repo, "thousand", change, checkout="full")
    script_worker(repo, "nap", "sleep 0.5")
    with open(os.path.join(repo, ".lore", "guild-hall.yaml"), "w") as f:
        f.write("commission_cap: 20\n")
    ours, plain = [], []
    for i in range(runs):
        pid = f"big-{i}"
        os.makedirs(os.path.join(repo, ".lore", "plans"), exist_ok=True)
        with open(os.path.join(repo, ".lore", "plans", f"{pid}.md"), "w") as f:
            f.write("---\nwaves:\n  - - {id: t, worker: thousand, prompt: change}\n---\n")
        state = os.path.join(env["GUILD_HALL_HOME"], "state")
        deadline = time.time() + 300
        subprocess.run([BIN, "reconcile", "--once"], cwd=repo, env=env, capture_output=True)
        while True:  # until the task's shim has ended (its exit recorded, its lock free): the next pass copies back
            task = os.path.join(state, os.listdir(state)[0], "plans", pid, "tasks", f"{pid}-exec-wave-1-task-1")
            if os.path.exists(os.path.join(task, "exit.json")) and not lock_held(os.path.join(task, "shim.lock")):
                break
            if time.time() > deadline:
                sys.exit("the task never succeeded")
            time.sleep(0.2)
        subprocess.run(["sync"])
        # The copy-back action alone, as the pass times it (`ms` of its entry); the worktree's
        # removal is a later action of its own.
        r = subprocess.run([BIN, "reconcile", "--once", "--json"], cwd=repo, env=env, capture_output=True, text=True)
        import json as _json
        entries = _json.loads(r.stdout)
        took = [e["ms"] for e in entries if e["action"] == "wave-integrate"]
        if not took:
            sys.exit(f"no wave-integrate in the pass after the task ended: {entries}\n{r.stderr}")
        ours.append(took[0] / 1000)
        # The same change with plain git: in a worktree at the base, applied to another.
        a, b = os.path.join(tmp, f"pa-{i}"), os.path.join(tmp, f"pb-{i}")
        git(repo, "worktree", "add", "-q", "--detach", a, "main")
        git(repo, "worktree", "add", "-q", "-b", f"plain-big-{i}", b, "main")
        subprocess.run(["sh", "-c", change], cwd=a, check=True)
        subprocess.run(["sync"])
        plain.append(run(["sh", "-c", f"git -C {a} diff --binary | git -C {b} apply --index && git -C {b} commit -q -m change"], repo)[0])
    # A wave of 20 trivial tasks at parallelism 4.
    tasks = "\n".join(f"    - {{id: t{i}, worker: nap, prompt: nap}}" for i in range(20))
    with open(os.path.join(repo, ".lore", "plans", "wide.md"), "w") as f:
        f.write("---\nparallelism: 4\nwaves:\n  -\n" + tasks + "\n---\n")
    t = time.perf_counter()
    subprocess.run([BIN, "reconcile", "--once", "--wait", "--timeout", "300s"], cwd=repo, env=env, check=True, capture_output=True)
    wide = time.perf_counter() - t
    return median(ours), median(plain), wide, 20 * 0.5 / 4


def lock_held(path):
    """Whether another process holds a lock on `path` (a shim holds its own for its whole life)."""
    import fcntl
    try:
        with open(path) as f:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
    except BlockingIOError:
        return True
    except FileNotFoundError:
        return False


def deps_project(tmp, name, kind, n, env):
    """A project of `n` waiting commissions whose dependencies are one another's `outputs:`
    (issue 17): `chain` (each waits on the one before; the first on a path no one declares, so
    nothing can start), `ring` (the chain closed: one cycle of n), `diamond` (n/2 layers of 2,
    each waiting on both outputs of the layer before: 2^(n/2) paths, no cycle)."""
    repo = os.path.join(tmp, name)
    new_repo(repo)
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    os.makedirs(os.path.join(repo, ".lore/workers/scribe"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "examples/workers/scribe/worker.yaml"), os.path.join(repo, ".lore/workers/scribe/"))
    d = os.path.join(repo, ".lore", "commissions")
    cid = (lambda i: f"c{i:05}") if kind != "diamond" else (lambda i: f"l{i // 2:03}-{i % 2}")
    out = lambda i: f".lore/out/{cid(i)}.md"
    for i in range(n):
        if kind == "diamond":
            deps = [] if i < 2 else [out(i // 2 * 2 - 2), out(i // 2 * 2 - 1)]
        elif kind == "ring":
            deps = [out((i - 1) % n)]
        else:
            deps = [out(i - 1)] if i else [".lore/nowhere.md"]
        with open(os.path.join(d, f"{cid(i)}.md"), "w") as f:
            f.write(f"---\ntitle: Step {i}\nworker: scribe\nstatus: pending\ncreated: 2026-11-22T10:00:00.000Z\n"
                    f"dependencies: [{', '.join(deps)}]\noutputs: [{out(i)}]\n---\nDo step {i}.\n")
    return repo


def timed(bin_, args, repo, env, timeout=None):
    """Wall time of one command (None if it ran past `timeout` and was killed)."""
    t = time.perf_counter()
    try:
        subprocess.run([bin_, *args], cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - t


def bench_deps(tmp, runs, baseline=None, base_n=None, base_timeout=600):
    """Issue 17: `check`, and one `reconcile --once` pass, over 10,000 dependent commissions;
    and `check` on a diamond of 60. With `baseline` (another build of guild-hall), the same
    measurements with it on an identical tree, side by side (fewer runs, a time limit: the
    old cycle search is cubic in a chain's length and exponential in a diamond's depth)."""
    rows = []
    bins = [("guild-hall", BIN, N, runs, None)]
    if baseline:
        if base_n and base_n != N:  # ours at the baseline's size too, for a like-for-like ratio
            bins.append(("guild-hall", BIN, base_n, runs, None))
        bins.append(("baseline", baseline, base_n or N, 1, base_timeout))
    cases = [("check", "chain"), ("check", "ring"), ("check", "diamond"), ("first pass", "chain"), ("next pass", "chain"),
             ("next pass", "ring")]
    for who, bin_, n, k, limit in bins:
        for what, kind in cases:
            if kind == "diamond" and who == "guild-hall" and n != N:
                continue  # ours on the diamond once
            size = 60 if kind == "diamond" else n
            times = []
            for i in range(k):
                name = f"{who}-{kind}-{what.replace(' ', '-')}-{i}"
                env = dict(ENV, GUILD_HALL_HOME=os.path.join(tmp, "home-" + name))
                repo = deps_project(tmp, name, kind, size, env)
                if what == "check":
                    times.append(timed(bin_, ["check"], repo, env, limit))
                else:
                    ready = True
                    if what == "next pass":  # the steady state: every commission already blocked
                        ready = timed(bin_, ["reconcile", "--once"], repo, env, limit) is not None
                    subprocess.run(["sync"])
                    times.append(timed(bin_, ["reconcile", "--once"], repo, env, limit) if ready else None)
                shutil.rmtree(repo, ignore_errors=True)
                shutil.rmtree(env["GUILD_HALL_HOME"], ignore_errors=True)
                if times[-1] is None:
                    break
            t = None if None in times else median(times)
            rows.append((who, what, kind, size, t, limit))
    return rows


def with_builds(measure):
    """Build this checkout's release (unless `--no-build` and it is there), then run
    `measure(tmp, builds)` in a fresh temp dir: `builds` is this build and, with `--baseline
    BIN`, that one, to take turns with."""
    if not os.path.exists(BIN) or "--no-build" not in sys.argv:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
    builds = [("this build", BIN)] + ([("baseline", baseline)] if baseline else [])
    # GUILD_HALL_BENCH_TMP: where the repositories and homes go (a tmpfs, say, to take the
    # filesystem's inode allocator out of the measurement).
    tmp = tempfile.mkdtemp(prefix="guild-hall-bench.", dir=os.environ.get("GUILD_HALL_BENCH_TMP"))
    try:
        return measure(tmp, builds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if "--only-long-watch" in sys.argv:
        n = 10 if "--quick" in sys.argv else 25
        rounds = 1 if "--quick" in sys.argv else 2
        at_rest = int(sys.argv[sys.argv.index("--at-rest") + 1]) if "--at-rest" in sys.argv else 0

        def measure(tmp, builds):
            out = {}
            for r in range(rounds):
                for who, binary in builds:
                    out.setdefault(who, []).append(bench_long_watch(tmp, n, binary, f"long-{r}-{who.replace(' ', '')}", at_rest))
            return out

        out = with_builds(measure)
        history = f", {at_rest} ended plans and {at_rest} closed meetings besides" if at_rest else ""
        print(f"| reaction to a new commission under one watch ({n} in a row, {rounds} watches{history}) | build | p50 | p95 | max | watch CPU, p50 |")
        print("|---|---|---|---|---|---|")
        for who, runs in out.items():
            for name, sl in (("first 5", slice(0, 5)), ("last 5", slice(-5, None)), (f"all {n}", slice(None))):
                part = [x for lat, _ in runs for x in lat[sl]]
                cpu = [x for _, c in runs for x in c[sl]]
                print(f"| {name} | {who} | {pct(part, 50):.0f} ms | {pct(part, 95):.0f} ms | {max(part):.0f} ms | {pct(cpu, 50):.1f} ms |")
        for who, runs in out.items():
            for lat, cpu in runs:
                print(f"<!-- {who}: latency " + " ".join(f"{x:.0f}" for x in lat) + "; cpu " + " ".join(f"{x:.1f}" for x in cpu) + " -->")
        return
    if "--only-deps" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        arg = lambda flag: sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None
        base = arg("--baseline")
        base_n = int(arg("--baseline-n")) if arg("--baseline-n") else None
        base_timeout = float(arg("--baseline-timeout") or 600)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            rows = bench_deps(tmp, RUNS, base, base_n, base_timeout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("| binary | command | commissions | wall (median) |")
        print("|---|---|---|---|")
        for who, what, kind, size, t, limit in rows:
            shown = f"{t*1000:.0f} ms" if t is not None and t < 1 else (f"{t:.1f} s" if t is not None else f"> {limit:.0f} s (stopped)")
            cmd = "`check`" if what == "check" else f"`reconcile --once`, {what}"
            print(f"| {who} | {cmd} | {kind} of {size:,} | {shown} |")
        return
    if "--only-scaling" in sys.argv:
        rows = with_builds(bench_scaling)
        print(f"| P1/P10: `reconcile --once --dry-run`, settled (median of {RUNS}) | build | wall | vs grep | peak RSS |")
        print("|---|---|---|---|---|")
        for n, who, t, rss, g in rows:
            print(f"| {n:,} commissions (grep -rl: {g*1000:.0f} ms) | {who} | {t*1000:.0f} ms | {t/g:.2f}× | {rss:.1f} MB |")
        return
    if "--only-dispatch" in sys.argv:
        ours, plain = with_builds(lambda tmp_, builds: bench_dispatch(tmp_, builds, ("sparse",)))
        print(f"| P4: one sparse dispatch, {N:,} tracked files (median of {RUNS}) | wall | vs plain git |")
        print("|---|---|---|")
        print(f"| plain git: `worktree add --no-checkout` + `sparse-checkout set` + `checkout` | {plain['sparse']*1000:.0f} ms | 1.00× |")
        for (who, mode), t in ours.items():
            print(f"| `reconcile --once`, {who} | {t*1000:.0f} ms | {t/plain['sparse']:.2f}× |")
        return
    if "--only-finish" in sys.argv:
        ours, plain = with_builds(lambda tmp_, builds: bench_finish(tmp_, 3 if "--quick" in sys.argv else 5, builds))
        print(f"| P11: finishing a commission that changed 100 of {N:,} files (full checkout), median | up to claude/main moving | vs plain git | the whole pass |")
        print("|---|---|---|---|")
        print(f"| plain git: `add -A` + `commit`, `merge --squash` + `commit` | {plain*1000:.0f} ms | 1.00× | |")
        for who, (moved, whole) in ours.items():
            print(f"| the `reconcile --once` that finishes it, {who} | {moved*1000:.0f} ms | {moved/plain:.2f}× | {whole*1000:.0f} ms |")
        return
    if "--only-throughput" in sys.argv:
        res, ideal = with_builds(lambda tmp_, builds: bench_throughput(tmp_, 3 if "--quick" in sys.argv else 5, builds))
        print("| P9: 100 one-second commissions, caps 20/20 | build | wall (median) | vs ideal |")
        print("|---|---|---|---|")
        for (who, how), t in sorted(res.items()):
            print(f"| `{how}` | {who} | {t:.2f} s | {t/ideal:.2f}× (ideal {ideal:.1f} s) |")
        return
    if "--only-waves" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            ours, plain, wide, ideal = bench_waves(tmp, 3 if "--quick" in sys.argv else 5)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("| plans | guild-hall | baseline | ratio |")
        print("|---|---|---|---|")
        print(f"| copy-back of a task changing 1,000 of {N:,} files (the `wave-integrate` action) | {ours*1000:.0f} ms | `git diff --binary \\| git apply --index` + `git commit`: {plain*1000:.0f} ms | {ours/plain:.2f}× |")
        print(f"| a wave of 20 tasks of 0.5 s at parallelism 4 (sparse), start to completed | {wide:.2f} s | ideal (20 × 0.5 s / 4): {ideal:.2f} s | {wide/ideal:.2f}× |")
        return
    if "--only-meetings" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            quick = "--quick" in sys.argv
            f50, f95, whole, own, op, cl, gop, gcl = bench_meetings(tmp, 20 if quick else 50, 3 if quick else 5)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("| meetings | guild-hall | plain git | target |")
        print("|---|---|---|---|")
        print(f"| turn overhead to the first text_delta, p50 | {f50*1000:.1f} ms | | < 20 ms |")
        print(f"| turn overhead to the first text_delta, p95 | {f95*1000:.1f} ms | | |")
        print(f"| a whole turn of a trivial worker (`meeting send`, start to exit), median | {whole*1000:.0f} ms | | |")
        print(f"| (subtracted: the worker's own time to its first event) | {own*1000:.1f} ms | | |")
        print(f"| open, full checkout of {N:,} files (`meeting start`, no turn) | {op*1000:.0f} ms | branch + `git worktree add`: {gop*1000:.0f} ms | |")
        print(f"| close: notes, leftovers, squash merge, worktree removed | {cl*1000:.0f} ms | `add -A` + `commit` + `git worktree remove`: {gcl*1000:.0f} ms | |")
        return
    if "--only-parse" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            r = bench_odd_frontmatter(tmp, 5)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("| artifact | `guild-hall check` (median of 5) |")
        print("|---|---|")
        for label, t in r.items():
            print(f"| {label} | {t*1000:.0f} ms |")
        return
    if "--only-confinement" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            r = bench_confinement(tmp, 7 if "--quick" in sys.argv else 15)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (cd, cw), (od, ow) = r["confined"], r["off"]
        print("| measurement (median) | confined | `sandbox: off` | difference |")
        print("|---|---|---|---|")
        print(f"| one pass that dispatches (sparse) | {cd*1000:.1f} ms | {od*1000:.1f} ms | {(cd-od)*1000:+.1f} ms |")
        print(f"| a whole commission, pending to merged | {cw*1000:.1f} ms | {ow*1000:.1f} ms | {(cw-ow)*1000:+.1f} ms |")
        return
    if "--only-settled" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            grep_t, gh_t, gh_rss = bench_dry_run(tmp)
            print("| `reconcile --once --dry-run`, 10,000 settled artifacts (median of %d) | wall | peak RSS | ratio |" % RUNS)
            print("|---|---|---|---|")
            print(f"| grep -rl '^status: pending' (floor) | {grep_t*1000:.0f} ms | | 1.0× |")
            print(f"| this build | {gh_t*1000:.0f} ms | {gh_rss:.1f} MB | {gh_t/grep_t:.1f}× grep |")
            if baseline:
                t, rss, bt, brss = bench_settled_against(tmp, baseline)
                print(f"| this build, taking turns with the baseline | {t*1000:.0f} ms | {rss:.1f} MB | {t/bt:.2f}× baseline |")
                print(f"| baseline `{baseline}` | {bt*1000:.0f} ms | {brss:.1f} MB | 1.00× |")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if "--only-status" in sys.argv:
        if not os.path.exists(BIN) or "--no-build" not in sys.argv:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
        try:
            bench_dry_run(tmp)
            rows, t, rss = bench_status(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("| measurement | measured | target |")
        print("|---|---|---|")
        print(f"| `status --json` over {rows:,} settled artifacts (median of {RUNS}) | {t*1000:.0f} ms | |")
        print(f"| peak RSS of `status --json` | {rss:.1f} MB | < 20 MB |")
        return
    if not os.path.exists(BIN) or "--no-build" not in sys.argv:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp(prefix="guild-hall-bench.")
    try:
        quick = "--quick" in sys.argv
        baseline = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
        builds = [("this build", BIN)] + ([("baseline", baseline)] if baseline else [])
        rows = []
        for mode, pause in (("after 1 s of quiet", 1.0), ("back to back", 0.0)):
            for who, binary in builds:
                p50, p95 = bench_watch_latency(tmp, 10 if quick else 50, pause, binary, f"lat-{len(rows)}")
                rows.append((mode, who, p50, p95))
        idle = [(who,) + bench_watch_idle(tmp, 15 if quick else 60, binary) for who, binary in builds]
        print("| watch (P2, P3) | build | p50 / value | p95 |")
        print("|---|---|---|---|")
        for mode, who, p50, p95 in rows:
            print(f"| edit-to-spawn, sparse, {mode} | {who} | {p50:.0f} ms | {p95:.0f} ms |")
        for who, cpu, hwm, writes, secs, wakes in idle:
            print(f"| idle CPU, {N:,} artifacts in 2 projects, over {secs} s | {who} | {cpu:.3f} % of one core | |")
            print(f"| thread wake-ups at rest | {who} | {wakes:.1f} per second | |")
            print(f"| peak RSS of the watcher | {who} | {hwm:.1f} MB | |")
            print(f"| files written at rest | {who} | {writes} | |")
        print()
        if "--only-watch" in sys.argv:
            return
        grep_t, gh_t, gh_rss = bench_dry_run(tmp)
        sparse, full, git_sparse, git_full = bench_dispatch(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"| measurement | guild-hall | baseline | ratio |")
    print(f"|---|---|---|---|")
    print(f"| dry-run over {N:,} settled artifacts vs grep -rl | {gh_t*1000:.0f} ms | {grep_t*1000:.0f} ms | {gh_t/grep_t:.1f}× |")
    print(f"| peak RSS of that dry-run | {gh_rss:.1f} MB | target < 50 MB | |")
    print(f"| dispatch, sparse ({N:,} tracked files), one reconcile pass | {sparse*1000:.0f} ms | git worktree add + sparse-checkout: {git_sparse*1000:.0f} ms | {sparse/git_sparse:.1f}× |")
    print(f"| dispatch, full ({N:,} tracked files), one reconcile pass | {full*1000:.0f} ms | git worktree add: {git_full*1000:.0f} ms | {full/git_full:.1f}× |")


if __name__ == "__main__":
    main()
