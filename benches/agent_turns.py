"""A real agent's meeting turn overhead: from `guild-hall meeting send` starting to the first
`text_delta` on its stdout, with the agent's CLI (from npm, in target/<agent>, as the tests
install it) talking to the tests' local stand-in for its model API, which answers at once.
What is measured is guild-hall's part (about 15 ms, BENCHMARKS.md) plus the agent CLI's own
start, its session resume and its request: what a person waits for before the first word.

Run: python3 benches/agent_turns.py [TURNS] [AGENT...]   (release build; default 10 turns,
every agent below). Each agent is one entry of AGENTS: its bundled package, its stand-in, its
CLI's directory under target/ and the environment that points it at the stand-in.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "guild-hall")

AGENTS = {
    "claude-code": {
        "package": "claude-code",
        "stand_in": "fake_anthropic.py",
        "cli": "claude-code",
        "env": lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-stand-in"},
    },
    "codex": {
        "package": "codex",
        "stand_in": "fake_openai.py",
        "cli": "codex",
        "env": lambda url: {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-stand-in", "CODEX_MODEL": "stand-in-model"},
    },
}


def start_stand_in(tmp, server, turns):
    script = os.path.join(tmp, "script.json")
    with open(script, "w") as f:
        json.dump([{"text": "hello"}] * (turns + 2), f)
    port_file = os.path.join(tmp, "port")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", server), script, os.path.join(tmp, "requests.jsonl"), port_file])
    deadline = time.time() + 30
    while not os.path.exists(port_file):
        if time.time() > deadline:
            proc.kill()
            raise SystemExit(f"{server} did not listen")
        time.sleep(0.05)
    with open(port_file) as f:
        return proc, f"http://127.0.0.1:{f.read().strip()}"


def bench(agent, turns):
    a = AGENTS[agent]
    cli_bin = os.path.join(ROOT, "target", a["cli"], "node_modules", ".bin")
    if not os.path.isdir(cli_bin):
        raise SystemExit(f"{agent}: no CLI in {cli_bin} (run the tests or .ci/run first)")
    tmp = tempfile.mkdtemp(prefix=f"agent-turns-{agent}-")
    proc = None
    try:
        repo, home, user = (os.path.join(tmp, d) for d in ("repo", "home", "user-home"))
        os.makedirs(repo)
        os.makedirs(user)
        env = dict(os.environ, GUILD_HALL_HOME=home, HOME=user, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
        env["PATH"] = cli_bin + os.pathsep + env.get("PATH", "")
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-q", "--allow-empty", "-m", "i"]):
            subprocess.run(cmd, cwd=repo, env=env, check=True)
        subprocess.run([BIN, "init"], cwd=repo, env=env, check=True, capture_output=True)
        shutil.copytree(os.path.join(ROOT, "contrib", "workers", a["package"]), os.path.join(repo, ".lore", "workers", a["package"]))
        proc, url = start_stand_in(tmp, a["stand_in"], turns)
        env.update(a["env"](url))
        subprocess.run([BIN, "meeting", "start", "--worker", a["package"], "--id", "m", "hello"], cwd=repo, env=env, check=True, capture_output=True)
        first, whole = [], []
        for i in range(turns):
            t0 = time.perf_counter()
            p = subprocess.Popen([BIN, "meeting", "send", "m", f"turn {i}", "--json"], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for line in p.stdout:
                if '"text_delta"' in line:
                    first.append(time.perf_counter() - t0)
                    break
            p.wait()
            whole.append(time.perf_counter() - t0)
        if len(first) < turns:
            raise SystemExit(f"{agent}: {turns - len(first)} turns without a text_delta")
        first.sort()
        return statistics.median(first), first[min(len(first) - 1, int(len(first) * 0.95))], statistics.median(whole)
    finally:
        if proc:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args = sys.argv[1:]
    turns = int(args.pop(0)) if args and args[0].isdigit() else 10
    agents = args or list(AGENTS)
    print(f"| agent | first text_delta, p50 | p95 | whole turn, median | ({turns} turns) |")
    print("| --- | --- | --- | --- | --- |")
    for agent in agents:
        f50, f95, w = bench(agent, turns)
        print(f"| {agent} | {f50 * 1000:.0f} ms | {f95 * 1000:.0f} ms | {w * 1000:.0f} ms | |")


if __name__ == "__main__":
    main()
