// What every end-to-end test needs: the server's address and token (from
// the Go harness), a Chromium driven by playwright-core, screenshots, and
// a way to cut every connection between browser and server.

import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the end-to-end tests through \`make e2e\` (internal/webui/e2e_test.go starts the server)`);
  return v;
}

export const env = {
  url: need("CORRAL_E2E_URL").replace(/\/$/, ""),
  token: need("CORRAL_E2E_TOKEN"),
  template: process.env["CORRAL_E2E_TEMPLATE"] ?? "",
  /** desktopTemplate, when set, has a desktop: the Desktop tab is tested on it. */
  desktopTemplate: process.env["CORRAL_E2E_DESKTOP_TEMPLATE"] ?? "",
  /** model, when set, is served by the harness's scripted model: the built-in agent's job is tested. */
  model: process.env["CORRAL_E2E_MODEL"] ?? "",
  /** dropURL, POSTed, cuts every open browser↔server connection (the harness's proxy). */
  dropURL: process.env["CORRAL_E2E_DROP_URL"] ?? "",
  chromium: process.env["CORRAL_E2E_CHROMIUM"] ?? "/usr/bin/chromium",
  screenshots: process.env["CORRAL_E2E_SCREENSHOTS"] ?? path.resolve(process.cwd(), "..", "artifacts", "screenshots"),
};

/** Chromium as a CI machine can run it: no sandbox (root), no GPU, no network chatter. */
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: env.chromium, args: chromiumArgs, headless: true });
}

export async function newContext(browser: Browser, opts: { width?: number; height?: number; dark?: boolean } = {}): Promise<BrowserContext> {
  const ctx = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    colorScheme: opts.dark ? "dark" : "light",
    acceptDownloads: true,
  });
  ctx.setDefaultTimeout(30_000);
  return ctx;
}

/** watch makes page errors fail loudly: console errors and uncaught exceptions are collected. */
export function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`uncaught: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !/Failed to load resource|WebSocket connection/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  page.on("dialog", (d) => void d.accept());
  return problems;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(env.screenshots, { recursive: true });
  // From the top: a full-page shot of a scrolled page shows the sticky
  // header in the middle.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(env.screenshots, `${name}.png`), fullPage: true });
}

/** login logs page in through the login form. */
export async function login(page: Page, token = env.token): Promise<void> {
  await page.goto(env.url + "/login");
  await page.getByLabel("Access token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Jobs" }).waitFor();
}

/** drop cuts every connection between the browser and the server. */
export async function drop(): Promise<number> {
  const resp = await fetch(env.dropURL, { method: "POST" });
  if (!resp.ok) throw new Error(`drop: ${resp.status}`);
  return Number(await resp.text());
}

/** api calls the server directly (setting up and checking, not what is tested). */
export async function api<T>(method: string, p: string, body?: unknown): Promise<T> {
  const init = {
    method,
    headers: { Authorization: `Bearer ${env.token}`, "Content-Type": "application/json", Accept: "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  };
  let resp: Response;
  try {
    resp = await fetch(env.url + p, init);
  } catch {
    // A pooled keep-alive connection that an earlier test's cut-able proxy
    // closed fails before the request is sent; a new connection serves.
    resp = await fetch(env.url + p, init);
  }
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${p}: ${resp.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** terminalText reads the whole buffer of the visible terminal. */
export async function terminalText(page: Page): Promise<string> {
  const host = page.locator(".terminal-wrap:not([hidden]) [data-testid=terminal]");
  return host.evaluate((el) => (el as HTMLElement & { corralText?: () => string }).corralText?.() ?? "");
}

/** until polls check until it returns true (UI state is asserted, never wall-clock time). */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/** failureShot saves the page of a failed test as failed-<test>.png, to see what it showed. */
export async function failureShot(page: Page | undefined, task: { name: string; result?: { state?: string } }): Promise<void> {
  if (!page || task.result?.state !== "fail") return;
  const name = "failed-" + task.name.toLowerCase().replace(/[^a-z0-9]+/g, "-").slice(0, 60);
  await screenshot(page, name).catch(() => {});
}
