#!/usr/bin/env python3
"""guild-hall web face benchmarks (issue 37).
Run: python3 benches/web.py [--quick] [--no-build] [--n N]

One project with 1,000 settled commission artifacts (--n to change), `guild-hall serve` on it
(its reconciler beside it), Debian's headless chromium driven by tests/web/driver.mjs (the
browser tests' driver: playwright-core from target/playwright, as ./test.sh installs it), and
the terminal board in a tmux pane on the same project, side by side:

1. The board page's first paint over the 1,000: a fresh load of `/` each run, the browser's own
   `first-contentful-paint` (the page is rendered by the server, items and all: the first paint
   shows them), the navigation's response time and DOMContentLoaded, and the items in the DOM;
   next to `guild-hall status` over the same tree (wall time of the command). Median of 5.
2. File write to page: a commission written as an editor saves (a temp file renamed into
   `.lore/commissions/`), to the board page showing its card — timed in the browser by a
   MutationObserver (`Date.now()` when the card appears, against the wall clock just before the
   rename) — and, for the same write, to the terminal board's pane showing it (`tmux
   capture-pane`, polled; the board filtered to those ids, as benches/board.py does). Median
   and p95 of 30 (10 with --quick).

Everything happens in a temp dir with its own GUILD_HALL_HOME. Prints markdown tables.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the shared helpers: repositories, runs)

QUICK = "--quick" in sys.argv
RUNS = 10 if QUICK else 30
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 1_000
PLAYWRIGHT = os.path.join(bench.ROOT, "target", "playwright", "node_modules", "playwright-core")


class Browser:
    """tests/web/driver.mjs: one command per line, one reply per line."""

    def __init__(self, tmp):
        if not os.path.isdir(PLAYWRIGHT):
            sys.exit(f"playwright-core is not installed in {PLAYWRIGHT}: run ./test.sh once, or "
                     "npm install --prefix target/playwright playwright-core@1.65.1")
        env = dict(os.environ, GUILD_HALL_PLAYWRIGHT=PLAYWRIGHT, GUILD_HALL_CHROMIUM=shutil.which("chromium") or "chromium",
                   GUILD_HALL_BROWSER_PROFILE=tempfile.mkdtemp(prefix="profile-", dir=tmp))
        self.p = subprocess.Popen(["node", os.path.join(bench.ROOT, "tests", "web", "driver.mjs")], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(self, op, **args):
        self.p.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.p.stdin.flush()
        reply = json.loads(self.p.stdout.readline())
        if not reply["ok"]:
            sys.exit(f"browser: {op} {args}: {reply['error']}\n{reply.get('page_text', '')[:2000]}")
        return reply["value"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


# The first paint, once it has happened (headless chromium reports paint timing).
PAINT = """new Promise((done) => {
  const look = () => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    if (!fcp) return setTimeout(look, 5);
    const nav = performance.getEntriesByType('navigation')[0];
    done({fcp: fcp.startTime, response: nav.responseEnd - nav.startTime, dcl: nav.domContentLoadedEventEnd - nav.startTime,
          items: document.querySelectorAll('li[data-testid=item]').length});
  };
  look();
})"""

# When each wanted card appeared (Date.now()), seen by an observer of the whole document (the
# stream replaces the columns' HTML).
OBSERVE = """(() => {
  window.__want = new Set(); window.__seen = {};
  new MutationObserver(() => {
    for (const id of window.__want) {
      if (document.querySelector(`li[data-testid=item][data-id="${id}"]`)) { window.__seen[id] = Date.now(); window.__want.delete(id); }
    }
  }).observe(document.body, {childList: true, subtree: true});
  return true;
})()"""


def serve(env, repo, log):
    p = subprocess.Popen([bench.BIN, "-C", repo, "serve"], env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    url = p.stdout.readline().strip()
    if not url.startswith("http://"):
        sys.exit(f"serve printed no URL: {url!r}")
    return p, url


def main():
    if not os.path.exists(bench.BIN) or "--no-build" not in sys.argv:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=bench.ROOT, check=True)
    tmp = tempfile.mkdtemp(prefix="guild-hall-bench-web.")
    sock = os.path.join(tmp, "tmux.sock")
    home = os.path.join(tmp, "home")
    env = dict(bench.ENV, GUILD_HALL_HOME=home, TERM="xterm-256color")
    tmux = lambda *a: subprocess.run(["tmux", "-S", sock, *a], env=env, capture_output=True, text=True, check=False).stdout
    server = browser = None
    try:
        repo = os.path.join(tmp, "web")
        bench.settled_tree(repo, N, env)
        server, url = serve(env, repo, open(os.path.join(tmp, "serve.log"), "w"))
        origin = url.split("/?")[0]
        browser = Browser(tmp)
        browser.call("goto", url=url)  # the token, then its cookie
        browser.call("wait", selector=f"li[data-testid=item][data-id=c{N - 1:05}]", state="attached")
        time.sleep(3)  # the reconciler's first passes

        # 1. First paint, beside `status`.
        paints, statuses = [], []
        for _ in range(bench.RUNS):
            browser.call("goto", url=origin + "/")
            paints.append(browser.call("eval", js=PAINT))
            statuses.append(bench.run([bench.BIN, "status"], repo, env)[0] * 1000)
        if any(p["items"] != N for p in paints):
            sys.exit(f"the board did not show the {N} items: {paints}")

        # 2. Write to page, and to the terminal board's pane for the same write.
        tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "b", f"exec '{bench.BIN}' board -C '{repo}'")
        screen = lambda: tmux("capture-pane", "-p", "-t", "b")
        deadline = time.time() + 120
        while f"{N} items" not in screen():
            if time.time() > deadline:
                sys.exit("the terminal board never showed the items:\n" + screen())
            time.sleep(0.05)
        tmux("send-keys", "-t", "b", "/", "lat", "Enter")
        browser.call("goto", url=origin + "/")
        browser.call("wait", selector="body[data-live=on]", state="attached")
        browser.call("eval", js=OBSERVE)
        d = os.path.join(repo, ".lore", "commissions")
        web, term = [], []
        for i in range(RUNS):
            cid = f"lat{i:03}"
            browser.call("eval", js=f"window.__want.add('{cid}')")
            tmp_file = os.path.join(d, f".{cid}.md.swp")
            with open(tmp_file, "w") as f:
                f.write(f"---\ntitle: Latency {i}\nstatus: draft\nworker: scribe\ncreated: 2026-11-28T10:00:00.000Z\n---\nWait.\n")
            wall = time.time() * 1000
            t = time.perf_counter()
            os.rename(tmp_file, os.path.join(d, f"{cid}.md"))
            deadline = time.time() + 30
            while f" {cid} " not in screen():
                if time.time() > deadline:
                    sys.exit(f"{cid} never showed in the terminal board:\n" + screen())
            term.append((time.perf_counter() - t) * 1000)
            browser.call("wait", selector=f"li[data-testid=item][data-id={cid}]", state="attached")
            web.append(browser.call("eval", js=f"window.__seen['{cid}']") - wall)
            time.sleep(0.3)
        tmux("send-keys", "-t", "b", "q")
    finally:
        tmux("kill-server")
        if browser:
            browser.close()
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    med = lambda key: statistics.median(p[key] for p in paints)
    status_ms = statistics.median(statuses)
    print(f"| the board page over {N:,} settled commissions (median of {bench.RUNS}) | web page | `guild-hall status` | ratio |")
    print("|---|---|---|---|")
    print(f"| first contentful paint (all {N:,} cards in it) | {med('fcp'):.0f} ms | {status_ms:.0f} ms | {med('fcp') / status_ms:.1f}× |")
    print(f"| the page's response, whole | {med('response'):.0f} ms | | |")
    print(f"| DOMContentLoaded | {med('dcl'):.0f} ms | | |")
    print()
    pct = lambda xs, p: sorted(xs)[max(0, int(len(xs) * p) - 1)]
    print(f"| file write to screen ({RUNS} writes, {N:,} items) | web page | terminal board | ratio |")
    print("|---|---|---|---|")
    for name, p in (("p50", 0.5), ("p95", 0.95)):
        a, b = (statistics.median(web), statistics.median(term)) if p == 0.5 else (pct(web, p), pct(term, p))
        print(f"| {name} | {a:.0f} ms | {b:.0f} ms | {a / b:.1f}× |")
    print(f"| max | {max(web):.0f} ms | {max(term):.0f} ms | |")


if __name__ == "__main__":
    main()
