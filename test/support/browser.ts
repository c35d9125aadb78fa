/**
 * Headless Debian chromium driven through chromedriver's WebDriver protocol,
 * plain HTTP from the test: no npm package and no browser download (both
 * binaries come from Debian, scripts/apt-packages.txt). One browser per test
 * file; waits are conditions evaluated in the page (a MutationObserver),
 * never sleeps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { unusedPort } from './ports';

const CHROMIUM = process.env.METALFLOW_TEST_CHROMIUM ?? '/usr/bin/chromium';
const CHROMEDRIVER = process.env.METALFLOW_TEST_CHROMEDRIVER ?? '/usr/bin/chromedriver';
/** Where screenshots go: beside the run's other reports (git ignores it). */
export const SCREENSHOT_DIR = join(REPO_ROOT, 'test-results', 'screenshots');

/** Why browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  for (const [what, path] of [['chromium', CHROMIUM], ['chromedriver', CHROMEDRIVER]] as const) {
    if (!existsSync(path)) return `${what} not found at ${path}: install Debian's chromium and chromium-driver (scripts/apt-packages.txt)`;
  }
  return undefined;
}

export interface ConsoleEntry {
  level: string;
  message: string;
}

export class Browser {
  private constructor(
    private readonly driver: ChildProcess,
    private readonly base: string,
  ) {}

  static async open(): Promise<Browser> {
    const port = await unusedPort();
    const driver = spawn(CHROMEDRIVER, [`--port=${port}`, '--allowed-ips=127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      driver.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('started successfully')) resolve();
      });
      driver.once('exit', (code) => reject(new Error(`chromedriver exited (${code}) before it was ready: ${out}`)));
    });
    const root = `http://127.0.0.1:${port}`;
    const profile = mkdtempSync(join(tmpdir(), 'mf-chromium-'));
    const created = (await call(root, 'POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'chrome',
          'goog:chromeOptions': {
            binary: CHROMIUM,
            // --no-sandbox: the tests may run as root, where chromium refuses its sandbox.
            args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1500,1000', `--user-data-dir=${profile}`],
          },
          'goog:loggingPrefs': { browser: 'ALL' },
          timeouts: { script: 60_000, pageLoad: 60_000, implicit: 0 },
        },
      },
    })) as { sessionId: string };
    return new Browser(driver, `${root}/session/${created.sessionId}`);
  }

  private cmd(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    return call(this.base, method, path, body);
  }

  async goto(url: string): Promise<void> {
    await this.cmd('POST', '/url', { url });
  }

  async run<T>(script: string, ...args: unknown[]): Promise<T> {
    return (await this.cmd('POST', '/execute/sync', { script, args })) as T;
  }

  /**
   * Resolves with the text of the first element matching `css` whose text includes every one of `texts`
   * (an iframe's: its document's, as the Temporal UI renders markdown in same-origin frames), once the page
   * has one; fails after the session's script timeout, naming what it waited for. The page is checked on
   * each DOM change and, for frames' documents, which the observer cannot see, every 250 ms.
   */
  async waitForText(css: string, ...texts: string[]): Promise<string> {
    return (await this.cmd('POST', '/execute/async', {
      script: `const [css, texts, done] = arguments;
        const text = (e) => (e.tagName === 'IFRAME' ? e.contentDocument?.body?.textContent ?? '' : e.textContent);
        const match = () => [...document.querySelectorAll(css)].map(text).find((t) => texts.every((w) => t.includes(w)));
        let timer;
        const check = () => { const m = match(); if (m !== undefined) { observer.disconnect(); clearInterval(timer); done(m); } };
        const observer = new MutationObserver(check);
        observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
        timer = setInterval(check, 250);
        check();`,
      args: [css, texts],
    }).catch((err: Error) => {
      throw new Error(`waiting for ${css} with ${JSON.stringify(texts)}: ${err.message}`);
    })) as string;
  }

  /** Clicks the first element matching `css` whose text starts with `text`. */
  async click(css: string, text: string): Promise<void> {
    const clicked = await this.run<boolean>(
      `const el = [...document.querySelectorAll(arguments[0])].find((e) => e.textContent.trim().startsWith(arguments[1])); el?.click(); return Boolean(el);`,
      css,
      text,
    );
    if (!clicked) throw new Error(`no ${css} with text "${text}" to click`);
  }

  async screenshot(name: string): Promise<string> {
    const png = (await this.cmd('GET', '/screenshot')) as string;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const file = join(SCREENSHOT_DIR, `${name}.png`);
    writeFileSync(file, Buffer.from(png, 'base64'));
    return file;
  }

  /** The page's console since the last call (chromedriver's browser log). */
  async console(): Promise<ConsoleEntry[]> {
    return (await this.cmd('POST', '/se/log', { type: 'browser' })) as ConsoleEntry[];
  }

  async close(): Promise<void> {
    await this.cmd('DELETE', '').catch(() => undefined);
    this.driver.kill('SIGTERM');
  }
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { value: unknown };
  if (!res.ok) {
    const v = json.value as { error?: string; message?: string } | undefined;
    throw new Error(`WebDriver ${method} ${path}: ${v?.error ?? res.status}: ${(v?.message ?? '').split('\n')[0]}`);
  }
  return json.value;
}
