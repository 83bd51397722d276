"""A real agent's meeting turn overhead (issue 21): from `guild-hall meeting send` starting to
the first text of the answer on its stdout, the model API's stand-in (tests/fake_anthropic.py)
answering at once, on a meeting whose first turn is done (so each measured turn resumes or
loads its session). Anthropic-API agents only (Claude Code, Claude Code over ACP).

Usage: python3 benches/agent_turn.py PACKAGE BIN_DIR [N]
  e.g. benches/agent_turn.py claude-code-acp target/claude-code-acp/node_modules/.bin 7
       benches/agent_turn.py claude-code target/claude-code/node_modules/.bin 7
GH (environment) names the guild-hall binary (default target/debug/guild-hall: the agent's own
start, seconds, dwarfs what a release build saves).
"""
import json, os, subprocess, sys, tempfile, time, statistics
pkg, n = sys.argv[1], int(sys.argv[3]) if len(sys.argv) > 3 else 7
wt = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bindir = os.path.abspath(sys.argv[2])
gh = os.environ.get("GH") or f"{wt}/target/debug/guild-hall"
tmp = tempfile.mkdtemp(prefix="turnbench-")
try:
    repo, home, uh = f"{tmp}/repo", f"{tmp}/home", f"{tmp}/uh"
    os.makedirs(repo); os.makedirs(uh)
    env = dict(os.environ, GUILD_HALL_HOME=home, HOME=uh, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               PATH=f"{bindir}:{os.environ['PATH']}", ANTHROPIC_API_KEY="sk-x")
    run = lambda *a: subprocess.run(a, cwd=repo, env=env, check=True, capture_output=True)
    run("git", "init", "-q", "-b", "main"); run("git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "i")
    run("git", "config", "user.name", "a"); run("git", "config", "user.email", "a@b")
    run(gh, "init"); run(gh, "workers", "add", pkg)
    json.dump([{"text": f"answer {i}"} for i in range(200)], open(f"{tmp}/s.json", "w"))
    api = subprocess.Popen(["python3", f"{wt}/tests/fake_anthropic.py", f"{tmp}/s.json", f"{tmp}/r.jsonl", f"{tmp}/port"])
    while not os.path.exists(f"{tmp}/port"): time.sleep(0.05)
    env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{open(tmp + '/port').read().strip()}"
    run(gh, "meeting", "start", "--worker", pkg, "--id", "b", "hello")
    firsts, wholes = [], []
    for i in range(n):
        t0 = time.monotonic()
        p = subprocess.Popen([gh, "meeting", "send", "b", f"turn {i}"], cwd=repo, env=env, stdout=subprocess.PIPE, text=True)
        first = None
        for line in p.stdout:
            if first is None and "answer" in line:
                first = time.monotonic() - t0
        p.wait(); wholes.append(time.monotonic() - t0); firsts.append(first)
    api.kill()
    api.wait()
    print(f"{pkg}: first text p50 {statistics.median(firsts)*1000:.0f} ms (min {min(firsts)*1000:.0f}, max {max(firsts)*1000:.0f}); whole turn p50 {statistics.median(wholes)*1000:.0f} ms; n={n}")
finally:
    subprocess.run(["rm", "-rf", tmp])
