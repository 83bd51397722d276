//! A real browser for the web tests: Debian's headless `chromium` driven through a pinned
//! `playwright-core` by `tests/web/driver.mjs`, one command at a time, so a test interleaves
//! what the browser does with what it does to the project (`guild-hall serve` is
//! [`super::server::Web`]).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

use super::server::Web;
use crate::common::*;

/// The playwright-core the driver loads (pinned, from npm, like the agent CLIs).
const PLAYWRIGHT_CORE: &str = "1.65.1";

/// The browser on PATH (`GUILD_HALL_CHROMIUM` names another), or the test's failure in one
/// line naming it.
fn chromium() -> PathBuf {
    if let Some(b) = std::env::var_os("GUILD_HALL_CHROMIUM") {
        return PathBuf::from(b);
    }
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("chromium"))
        .find(|c| c.is_file());
    let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "chromium");
    needs(found.ok_or(missing), "chromium", "Debian's browser, driven headless by the web tests")
}

/// Where screenshots of the pages go when `GUILD_HALL_WEB_SCREENSHOTS` names a directory
/// (relative to the repository: `docs/web`), else nowhere.
pub(crate) fn screenshot_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("GUILD_HALL_WEB_SCREENSHOTS")?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    Some(dir)
}

/// One headless chromium with one page, closed when dropped.
pub(crate) struct Browser {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    replies: BufReader<ChildStdout>,
}

impl Browser {
    /// A new browser with a new empty profile in the project's temp dir (so anything of it
    /// left running is the test's own, named and killed by the `Project`).
    pub(crate) fn start(p: &Project) -> Browser {
        let chromium = chromium();
        let cli = npm_cli("playwright", "playwright-core", PLAYWRIGHT_CORE, "playwright-core");
        let package = cli.parent().and_then(Path::parent).expect("node_modules").join("playwright-core");
        let profile = tempfile::Builder::new().prefix("browser-profile-").tempdir_in(p.tmp.path()).expect("profile dir").keep();
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/driver.mjs");
        let mut child = needs(
            Command::new("node")
                .arg(driver)
                .env("GUILD_HALL_PLAYWRIGHT", package)
                .env("GUILD_HALL_CHROMIUM", chromium)
                .env("GUILD_HALL_BROWSER_PROFILE", &profile)
                .env("GUILD_HALL_BROWSER_TIMEOUT_MS", "60000")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn(),
            "node",
            "runs tests/web/driver.mjs, which drives chromium",
        );
        let stdin = child.stdin.take();
        let replies = BufReader::new(child.stdout.take().expect("driver stdout"));
        let mut b = Browser { child: Some(child), stdin, replies };
        // The first command waits for the browser to be up: a launch failure is said here.
        b.call(json!({"op": "errors"}));
        b
    }

    /// Send one command; its value, or the test's failure saying what the page showed.
    pub(crate) fn call(&mut self, cmd: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("driver running");
        writeln!(stdin, "{cmd}").and_then(|_| stdin.flush()).unwrap_or_else(|e| panic!("browser: the driver is gone ({e}) before {cmd}"));
        let mut line = String::new();
        let n = self.replies.read_line(&mut line).expect("driver reply");
        assert!(n > 0, "browser: the driver ended without answering {cmd} (its stderr is above)");
        let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("browser: {cmd}: an unreadable reply ({e}): {line}"));
        if reply["ok"] != true {
            panic!(
                "browser: {cmd} failed: {}\n  at {}\n  page errors: {}\n  the page said:\n{}",
                reply["error"].as_str().unwrap_or("?"),
                reply["url"].as_str().unwrap_or("?"),
                reply["page_errors"],
                reply["page_text"].as_str().unwrap_or("")
            );
        }
        reply["value"].clone()
    }

    pub(crate) fn goto(&mut self, url: &str) {
        self.call(json!({"op": "goto", "url": url}));
    }

    pub(crate) fn viewport(&mut self, width: u32, height: u32) {
        self.call(json!({"op": "viewport", "width": width, "height": height}));
    }

    pub(crate) fn click(&mut self, selector: &str) {
        self.call(json!({"op": "click", "selector": selector}));
    }

    pub(crate) fn fill(&mut self, selector: &str, text: &str) {
        self.call(json!({"op": "fill", "selector": selector, "text": text}));
    }

    /// Press `key` (Playwright's names: `Tab`, `Enter`, `Control+Enter`) on the focused element.
    pub(crate) fn press(&mut self, key: &str) {
        self.call(json!({"op": "press", "key": key}));
    }

    /// Wait for an element matching `selector` to be visible.
    pub(crate) fn wait(&mut self, selector: &str) {
        self.call(json!({"op": "wait", "selector": selector}));
    }

    /// Wait for the element matching `selector` (the body when `None`) to contain `text`.
    pub(crate) fn wait_text(&mut self, selector: Option<&str>, text: &str) {
        self.call(json!({"op": "wait_text", "selector": selector, "text": text}));
    }

    pub(crate) fn wait_no_text(&mut self, selector: Option<&str>, text: &str) {
        self.call(json!({"op": "wait_no_text", "selector": selector, "text": text}));
    }

    /// The visible text of the first element matching `selector`.
    pub(crate) fn text(&mut self, selector: &str) -> String {
        self.call(json!({"op": "text", "selector": selector})).as_str().unwrap_or_default().to_string()
    }

    pub(crate) fn count(&mut self, selector: &str) -> u64 {
        self.call(json!({"op": "count", "selector": selector})).as_u64().unwrap_or(0)
    }

    /// The value of a JavaScript expression in the page (awaited).
    pub(crate) fn eval(&mut self, js: &str) -> Value {
        self.call(json!({"op": "eval", "js": js}))
    }

    /// The focused element: `{tag, id, testid, text}`.
    pub(crate) fn focused(&mut self) -> Value {
        self.call(json!({"op": "focused"}))
    }

    /// Press Tab until the element with `data-testid` `testid` has the focus (at most 60
    /// presses): the keyboard alone reaches it.
    pub(crate) fn tab_to(&mut self, testid: &str) {
        for _ in 0..60 {
            self.press("Tab");
            if self.focused()["testid"] == testid {
                return;
            }
        }
        panic!("browser: Tab never reached [data-testid={testid}] (focus is on {})", self.focused());
    }

    /// The page's uncaught errors and console errors so far.
    pub(crate) fn errors(&mut self) -> Vec<String> {
        serde_json::from_value(self.call(json!({"op": "errors"}))).unwrap_or_default()
    }

    /// The dialogs (alert, confirm, prompt) the page raised, each dismissed.
    pub(crate) fn dialogs(&mut self) -> Vec<String> {
        serde_json::from_value(self.call(json!({"op": "dialogs"}))).unwrap_or_default()
    }

    /// A screenshot `NAME.png` of the page into the screenshot directory, if one is asked for.
    pub(crate) fn screenshot(&mut self, name: &str) {
        if let Some(dir) = screenshot_dir() {
            let path = dir.join(format!("{name}.png"));
            self.call(json!({"op": "screenshot", "path": path, "full_page": false}));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // End of input: the driver closes the browser and exits.
        drop(self.stdin.take());
        if let Some(mut c) = self.child.take() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while matches!(c.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// `path` on the server `web` (the browser has its cookie once it visited `web.url`).
pub(crate) fn at(web: &Web, path: &str) -> String {
    format!("http://{}{path}", web.host)
}
