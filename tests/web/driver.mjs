// The browser the web tests drive: Debian's headless chromium through a pinned
// playwright-core, one page, one command per stdin line (JSON), one reply per stdout line
// (`{"ok":true,"value":…}` or `{"ok":false,"error":…}`), so a Rust test interleaves what the
// browser does with what it does to the project itself (tests/it/web/mod.rs, `Browser`).
//
// Environment: GUILD_HALL_PLAYWRIGHT (the playwright-core package dir), GUILD_HALL_CHROMIUM
// (the browser), GUILD_HALL_BROWSER_PROFILE (a new empty user-data-dir), GUILD_HALL_BROWSER_TIMEOUT_MS.
//
// Commands ({"op": NAME, ...}):
//   goto {url}                       open url, wait for its DOM
//   viewport {width, height}
//   click {selector}                 fill {selector, text}    press {key, selector?}
//   wait {selector, state?}          state: attached | detached | visible | hidden
//   wait_text {text, selector?}      until the element's (default body) text contains text
//   wait_no_text {text, selector?}   until it does not
//   text {selector}                  the element's innerText
//   count {selector}                 how many elements match
//   eval {js}                        the value of an expression (awaited)
//   focused                          the focused element: tag, id, data-testid, text
//   screenshot {path, full_page?}
//   dialogs                          the alert/confirm/prompt texts the page raised (dismissed)
//   errors                           uncaught page errors and console errors so far
import { createRequire } from 'node:module';
import readline from 'node:readline';

const pkg = process.env.GUILD_HALL_PLAYWRIGHT;
const executablePath = process.env.GUILD_HALL_CHROMIUM || 'chromium';
const profile = process.env.GUILD_HALL_BROWSER_PROFILE;
const timeout = Number(process.env.GUILD_HALL_BROWSER_TIMEOUT_MS || 60000);
if (!pkg || !profile) {
  console.error('driver.mjs: GUILD_HALL_PLAYWRIGHT and GUILD_HALL_BROWSER_PROFILE must be set');
  process.exit(2);
}
const { chromium } = createRequire(import.meta.url)(pkg);

// Chromium as root on a closed network: no sandbox (root), and nothing of its own that
// reaches out (its refused connections otherwise stall start-up and page loads).
const args = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
];
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args,
  viewport: { width: 1280, height: 800 },
});
context.setDefaultTimeout(timeout);
const page = context.pages()[0] || (await context.newPage());
const dialogs = [];
const errors = [];
page.on('dialog', (d) => {
  dialogs.push(`${d.type()}: ${d.message()}`);
  d.dismiss().catch(() => {});
});
page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
page.on('console', (m) => {
  if (m.type() === 'error') errors.push(`console error: ${m.text()}`);
});

/** The element's text, or the body's. */
async function textOf(selector) {
  return page.locator(selector || 'body').first().innerText();
}

const ops = {
  async goto({ url }) {
    await page.goto(url, { waitUntil: 'domcontentloaded' });
    return page.url();
  },
  async viewport({ width, height }) {
    await page.setViewportSize({ width, height });
  },
  async click({ selector }) {
    await page.locator(selector).first().click();
  },
  async fill({ selector, text }) {
    await page.locator(selector).first().fill(text);
  },
  async press({ key, selector }) {
    if (selector) await page.locator(selector).first().press(key);
    else await page.keyboard.press(key);
  },
  async wait({ selector, state }) {
    await page.locator(selector).first().waitFor({ state: state || 'visible' });
  },
  async wait_text({ text, selector }) {
    await page.waitForFunction(
      ([sel, want]) => {
        const el = document.querySelector(sel || 'body');
        return !!el && el.innerText.includes(want);
      },
      [selector || null, text],
      { timeout },
    );
  },
  async wait_no_text({ text, selector }) {
    await page.waitForFunction(
      ([sel, want]) => {
        const el = document.querySelector(sel || 'body');
        return !el || !el.innerText.includes(want);
      },
      [selector || null, text],
      { timeout },
    );
  },
  async text({ selector }) {
    return textOf(selector);
  },
  async count({ selector }) {
    return page.locator(selector).count();
  },
  async eval({ js }) {
    return page.evaluate(`(async () => (${js}))()`);
  },
  async focused() {
    return page.evaluate(() => {
      const e = document.activeElement;
      if (!e) return null;
      return { tag: e.tagName.toLowerCase(), id: e.id, testid: e.getAttribute('data-testid'), text: (e.innerText || e.value || '').slice(0, 200) };
    });
  },
  async screenshot({ path, full_page }) {
    await page.screenshot({ path, fullPage: !!full_page });
  },
  async dialogs() {
    return dialogs;
  },
  async errors() {
    return errors;
  },
};

/** What a failure shows besides its error: where the page is and what it says. */
async function context_of_failure() {
  let body = '';
  try {
    body = (await page.locator('body').innerText({ timeout: 2000 })).slice(0, 3000);
  } catch (e) {
    body = `(no text: ${e.message})`;
  }
  return { url: page.url(), page_text: body, page_errors: errors.slice(-10) };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let reply;
  try {
    const cmd = JSON.parse(line);
    const op = ops[cmd.op];
    if (!op) throw new Error(`unknown op ${JSON.stringify(cmd.op)}`);
    const value = await op(cmd);
    reply = { ok: true, value: value === undefined ? null : value };
  } catch (e) {
    reply = { ok: false, error: String(e && e.message ? e.message : e).split('\n').slice(0, 6).join('\n'), ...(await context_of_failure()) };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}
await context.close();
