#!/usr/bin/env python3
"""guild-hall board benchmarks (issue 23).
Run: python3 benches/board.py [--quick] [--no-build]

One project with 10,000 settled commission artifacts, `guild-hall watch` on it, and
`guild-hall board` on it in a tmux pane (120x40, a private tmux socket), side by side:

1. Idle CPU over 60 s at rest of the board and of the watcher, measured in the same window
   (`/proc/<pid>/stat` utime + stime), their peak RSS, and the files written at rest (every
   file under `.lore/` and the home, by path, mtime and size).
   And the board's start-up: from the tmux command to the items on screen.
2. File change to screen: a commission written the way an editor saves (a temp file renamed
   into `.lore/commissions/`), to the pane showing its id (`tmux capture-pane`, polled every
   millisecond or so; the board filtered to those ids so that each shows on the first page).
   Median and p95 of 30 (10 with --quick).

Everything happens in a temp dir with its own GUILD_HALL_HOME. Prints markdown tables.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the shared helpers: repositories, /proc readings)

QUICK = "--quick" in sys.argv
IDLE_SECS = 15 if QUICK else 60
RUNS = 10 if QUICK else 30


def settled_project(tmp, env):
    repo = os.path.join(tmp, "board")
    bench.settled_tree(repo, bench.N, env)
    return repo


def main():
    if not os.path.exists(bench.BIN) or "--no-build" not in sys.argv:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=bench.ROOT, check=True)
    tmp = tempfile.mkdtemp(prefix="guild-hall-bench-board.")
    sock = os.path.join(tmp, "tmux.sock")
    home = os.path.join(tmp, "home")
    env = dict(bench.ENV, GUILD_HALL_HOME=home, TERM="xterm-256color")
    tmux = lambda *a: subprocess.run(["tmux", "-S", sock, *a], env=env, capture_output=True, text=True, check=False).stdout
    watch = None
    try:
        repo = settled_project(tmp, env)
        watch = bench.start_watch(env, [repo], open(os.path.join(tmp, "watch.log"), "w"))
        t_start = time.perf_counter()
        tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "b", f"exec '{bench.BIN}' board -C '{repo}'")
        board = int(tmux("display", "-p", "-t", "b", "#{pane_pid}").strip())
        screen = lambda: tmux("capture-pane", "-p", "-t", "b")
        deadline = time.time() + 120
        while f"{bench.N} items" not in screen():
            if time.time() > deadline:
                sys.exit("the board never showed the settled artifacts:\n" + screen())
            time.sleep(0.01)
        startup = time.perf_counter() - t_start
        time.sleep(5)  # the watcher's start-up passes, the board's first frames

        before = bench.tree_state(os.path.join(repo, ".lore"), home)
        t0, b0, w0 = time.time(), bench.proc_cpu_ticks(board), bench.proc_cpu_ticks(watch.pid)
        time.sleep(IDLE_SECS)
        t1, b1, w1 = time.time(), bench.proc_cpu_ticks(board), bench.proc_cpu_ticks(watch.pid)
        writes = len(bench.tree_state(os.path.join(repo, ".lore"), home) ^ before)
        hz = os.sysconf("SC_CLK_TCK")
        board_cpu = (b1 - b0) / hz / (t1 - t0) * 100
        watch_cpu = (w1 - w0) / hz / (t1 - t0) * 100
        board_rss = bench.proc_hwm_mb(board)

        # Only the new commissions on screen: the filter, typed as a person would.
        tmux("send-keys", "-t", "b", "/", "lat", "Enter")
        d = os.path.join(repo, ".lore", "commissions")
        lat = []
        for i in range(RUNS):
            cid = f"lat{i:03}"
            tmp_file = os.path.join(d, f".{cid}.md.swp")
            with open(tmp_file, "w") as f:
                f.write(f"---\ntitle: Latency {i}\nstatus: draft\nworker: scribe\ncreated: 2026-11-28T10:00:00.000Z\n---\nWait.\n")
            t = time.perf_counter()
            os.rename(tmp_file, os.path.join(d, f"{cid}.md"))
            deadline = time.time() + 30
            while f" {cid} " not in screen():
                if time.time() > deadline:
                    sys.exit(f"{cid} never showed:\n" + screen())
            lat.append((time.perf_counter() - t) * 1000)
            time.sleep(0.3)
        tmux("send-keys", "-t", "b", "q")
    finally:
        tmux("kill-server")
        if watch:
            watch.terminate()
            watch.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    lat.sort()
    print(f"| {bench.N:,} settled artifacts, at rest over {IDLE_SECS} s, side by side | idle CPU | peak RSS |")
    print("|---|---|---|")
    print(f"| `guild-hall watch` | {watch_cpu:.2f} % of one core | |")
    print(f"| `guild-hall board` (with that watch running) | {board_cpu:.2f} % of one core | {board_rss:.1f} MB |")
    print(f"| files written at rest (`.lore/` and the whole home) | {writes} | |")
    print(f"| the board's start, to the {bench.N:,} items on screen | {startup*1000:.0f} ms | |")
    print()
    print(f"| file change to screen ({RUNS} runs) | measured |")
    print("|---|---|")
    print(f"| p50 | {statistics.median(lat):.0f} ms |")
    print(f"| p95 | {lat[max(0, int(len(lat) * 0.95) - 1)]:.0f} ms |")
    print(f"| max | {lat[-1]:.0f} ms |")


if __name__ == "__main__":
    main()
