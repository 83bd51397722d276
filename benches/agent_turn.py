#!/usr/bin/env python3
"""A real agent's meeting turn overhead (issue 21): from `guild-hall meeting send` starting to
the first `text_delta` on its stdout, with the agent's real CLI (the one the tests install into
`target/<agent>`) and the tests' stand-in for its model API answering at once. The time is the
agent CLI's start and its first model request, plus guild-hall's own share (the CLI, the
checks, the system prompt, the shim and the sandbox: see "Meetings" in BENCHMARKS.md).

Run: python3 benches/agent_turn.py [--turns N] [--bin PATH] [AGENT ...]
     (AGENT: claude-code, claude-code-acp, gemini, codex; default all; --bin defaults to target/release/guild-hall)

Each agent gets a temp dir with its own repository, GUILD_HALL_HOME and HOME; turn 1 (which
creates the session) is not counted; turns 2..N+1 resume it. Prints a markdown table.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per agent: its package, its CLI as the tests install it, the stand-in and its variables.
AGENTS = {
    "claude-code": ("target/claude-code/node_modules/.bin/claude", "fake_anthropic.py",
                    lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-stand-in"}),
    "claude-code-acp": ("target/claude-code-acp/node_modules/.bin/claude-code-acp", "fake_anthropic.py",
                        lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-stand-in"}),
    "gemini": ("target/gemini/node_modules/.bin/gemini", "fake_gemini.py",
               lambda url: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "stand-in"}),
    # A model Codex has no metadata for: the plain tool set the stand-in serves (as the tests).
    "codex": ("target/codex/node_modules/.bin/codex", "fake_openai.py",
              lambda url: {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-stand-in", "CODEX_MODEL": "stand-in-model"}),
    "codex-acp": ("target/codex-acp/node_modules/.bin/codex-acp", "fake_openai.py",
                  lambda url: {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-stand-in", "CODEX_MODEL": "stand-in-model"}),
    # `gemini --acp`: the Gemini CLI of the gemini row (turns within one clock minute load a session
    # Gemini CLI 0.61 has lost: the overhead is the same, the history is not carried).
    "gemini-acp": ("target/gemini/node_modules/.bin/gemini", "fake_gemini.py",
                   lambda url: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "stand-in"}),
}


def arg(name, default):
    if name in sys.argv:
        i = sys.argv.index(name)
        value = sys.argv[i + 1]
        del sys.argv[i:i + 2]
        return value
    return default


def run(cmd, cwd, env):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def bench(agent, bin_, turns):
    cli, server, variables = AGENTS[agent]
    cli = os.path.join(ROOT, cli)
    if not os.path.exists(cli):
        sys.exit(f"{agent}: {cli} is missing (run its tests or .ci/run first)")
    tmp = tempfile.mkdtemp(prefix=f"agent-turn-{agent}-")
    stand_in = None
    try:
        repo, home, user = (os.path.join(tmp, d) for d in ("repo", "home", "user-home"))
        os.makedirs(repo)
        os.makedirs(user)
        env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
                   GUILD_HALL_HOME=home, HOME=user, PATH=f"{os.path.dirname(cli)}:{os.environ['PATH']}")
        for args in (["init", "-q", "-b", "main"], ["config", "user.name", "Bench"],
                     ["config", "user.email", "bench@example.com"]):
            run(["git", *args], repo, env)
        with open(os.path.join(repo, "README.md"), "w") as f:
            f.write("bench\n")
        run(["git", "add", "-A"], repo, env)
        run(["git", "commit", "-q", "-m", "initial"], repo, env)
        run([bin_, "init"], repo, env)
        run([bin_, "workers", "add", agent], repo, env)
        with open(os.path.join(tmp, "script.json"), "w") as f:
            f.write("[]")  # every turn answers "done" at once
        port = os.path.join(tmp, "port")
        stand_in = subprocess.Popen(["python3", os.path.join(ROOT, "tests", server), os.path.join(tmp, "script.json"),
                                     os.path.join(tmp, "requests.jsonl"), port])
        deadline = time.time() + 30
        while not os.path.exists(port):
            if time.time() > deadline:
                sys.exit("the stand-in never listened")
            time.sleep(0.05)
        with open(port) as f:
            env.update(variables(f"http://127.0.0.1:{f.read().strip()}"))
        run([bin_, "meeting", "start", "--worker", agent, "--id", "m", "hello"], repo, env)
        first, whole = [], []
        for i in range(turns):
            t0 = time.perf_counter()
            p = subprocess.Popen([bin_, "meeting", "send", "m", f"turn {i}", "--json"], cwd=repo, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            seen = False
            for line in p.stdout:
                if not seen and '"text_delta"' in line:
                    first.append(time.perf_counter() - t0)
                    seen = True
            p.wait()
            whole.append(time.perf_counter() - t0)
            if not seen:
                sys.exit(f"{agent}: turn {i} streamed no text")
        first.sort()
        p95 = first[min(len(first) - 1, int(len(first) * 0.95))]
        return statistics.median(first), p95, statistics.median(whole)
    finally:
        if stand_in:
            stand_in.kill()
            stand_in.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    turns = int(arg("--turns", "10"))
    bin_ = arg("--bin", os.path.join(ROOT, "target", "release", "guild-hall"))
    agents = sys.argv[1:] or list(AGENTS)
    print(f"| agent | first `text_delta`, p50 | p95 | whole turn, median |  ({turns} turns, {bin_})")
    print("|---|---|---|---|")
    for agent in agents:
        p50, p95, whole = bench(agent, bin_, turns)
        print(f"| {agent} | {p50 * 1000:.0f} ms | {p95 * 1000:.0f} ms | {whole * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
