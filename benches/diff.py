#!/usr/bin/env python3
"""`guild-hall diff` of a 1,000-file change beside git's own diff of the same two commits (issue 34).
Run: python3 benches/diff.py [--quick] [--no-build] [--files N]
GUILD_HALL_BENCH_BIN=PATH measures that build instead of this checkout's release build.

A repository of 2,000 text files (40 lines each) and a commission whose branch changes 1,000
of them: 800 edited (two lines changed, three added), 100 added, 100 deleted. Each measurement
runs guild-hall and git in turn, fresh processes, output to /dev/null (not a terminal: no
pager, no colour), and reports the medians of wall time and of CPU time (user + system: on a
shared machine, what the command itself costs) and their ratios:

  guild-hall diff big --stat   beside  git diff --stat claude/main...claude/commission/big
  guild-hall diff big          beside  git diff claude/main...claude/commission/big
  guild-hall diff big --json   beside  git diff claude/main...claude/commission/big

(`A...B` is git's diff from the merge base to B: the change `guild-hall diff` shows.)
"""
import os, resource, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("GUILD_HALL_BENCH_BIN") or os.path.join(ROOT, "target", "release", "guild-hall")
RUNS = 5 if "--quick" in sys.argv else 15
CHANGED = int(sys.argv[sys.argv.index("--files") + 1]) if "--files" in sys.argv else 1000
TOTAL = 2 * CHANGED


def env_for(tmp):
    return dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", GUILD_HALL_HOME=os.path.join(tmp, "home"),
                HOME=os.path.join(tmp, "uhome"))


def git(cwd, env, *args):
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def lines(i, edited=False):
    body = [f"file {i} line {n}: some text that a change would touch\n" for n in range(40)]
    if edited:
        body[10] = f"file {i} line 10: changed by the worker\n"
        body[30] = f"file {i} line 30: changed by the worker\n"
        body[20:20] = [f"file {i} added line {n}\n" for n in range(3)]
    return "".join(body)


def write(repo, path, text):
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def project(tmp):
    """The repository, guild-hall set up, and commission `big` whose branch holds the change."""
    env = env_for(tmp)
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    os.makedirs(env["HOME"])
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "config", "user.name", "Bench")
    git(repo, env, "config", "user.email", "bench@example.com")
    for i in range(TOTAL):
        write(repo, f"src/d{i // 100}/f{i}.txt", lines(i))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "base")
    subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
    git(repo, env, "checkout", "-q", "-b", "claude/commission/big", "claude/main")
    edited, added, deleted = CHANGED * 8 // 10, CHANGED // 10, CHANGED // 10
    for i in range(edited):
        write(repo, f"src/d{i // 100}/f{i}.txt", lines(i, edited=True))
    for i in range(added):
        write(repo, f"src/new/n{i}.txt", lines(TOTAL + i))
    for i in range(deleted):
        os.remove(os.path.join(repo, f"src/d{(TOTAL - 1 - i) // 100}/f{TOTAL - 1 - i}.txt"))
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "the worker's change")
    git(repo, env, "checkout", "-q", "main")
    # The commission as guild-hall leaves it after attempt 1 (settled: nothing for a pass to do).
    write(repo, ".lore/commissions/big.md",
          "---\nworker: scribe\ntitle: Big\nstatus: completed\nattempt: 1\nbranch: claude/commission/big\n---\nChange 1,000 files.\n")
    return repo, env


def timed(cmd, cwd, env):
    """Wall time and CPU time (user + system) of one run of `cmd`: on a shared machine the CPU
    time is what the command itself costs, the wall time also what it waited for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def side_by_side(repo, env, ours, theirs):
    """Medians (wall, CPU) of `ours` and of `theirs`, run in turn (one warm-up each first)."""
    timed(ours, repo, env)
    timed(theirs, repo, env)
    a, b = [], []
    for _ in range(RUNS):
        a.append(timed(ours, repo, env))
        b.append(timed(theirs, repo, env))
    med = lambda runs, i: statistics.median(r[i] for r in runs)
    return (med(a, 0), med(a, 1)), (med(b, 0), med(b, 1))


def main():
    if "--no-build" not in sys.argv or not os.path.exists(BIN):
        subprocess.run(["cargo", "build", "--release", "--bin", "guild-hall"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        repo, env = project(tmp)
        span = "claude/main...claude/commission/big"
        out = subprocess.run([BIN, "diff", "big", "--stat"], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout
        want = subprocess.run(["git", "diff", "--stat", span], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout
        same = "the same" if out == want else "DIFFERENT"
        print(f"{CHANGED} files changed of {TOTAL}; guild-hall's stat and git's are {same}; {out.splitlines()[-1].strip()}\n")
        rows = [
            ("`diff --stat`", [BIN, "diff", "big", "--stat"], ["git", "diff", "--stat", span]),
            ("`diff` (the patch)", [BIN, "diff", "big"], ["git", "diff", span]),
            ("`diff --json`", [BIN, "diff", "big", "--json"], ["git", "diff", span]),
        ]
        print("| measurement | git beside it | guild-hall wall / CPU | git wall / CPU | ratio wall / CPU |")
        print("|---|---|---|---|---|")
        for name, ours, theirs in rows:
            (aw, ac), (bw, bc) = side_by_side(repo, env, ours, theirs)
            print(f"| {name} | `git {' '.join(theirs[1:])}` | {aw * 1000:.0f} / {ac * 1000:.0f} ms | {bw * 1000:.0f} / {bc * 1000:.0f} ms "
                  f"| {aw / bw:.2f}× / {ac / bc:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
