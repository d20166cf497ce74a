// Sandboxes end to end: create one from the Sandboxes page, open a shell,
// type in it, reload and drop the connection mid-output without losing a
// byte, resize with the window, several terminals as tabs; browse, view,
// upload and download files; delete the sandbox.

import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { api, drop, env, failureShot, launch, login, newContext, screenshot, terminalText, until, watch } from "./harness";

let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let problems: string[];
let sandboxID = "";

beforeAll(async () => {
  browser = await launch();
  ctx = await newContext(browser);
  page = await ctx.newPage();
  problems = watch(page);
  await login(page);
});

afterEach(async (ctx) => {
  await failureShot(page, ctx.task);
});

afterAll(async () => {
  if (sandboxID) await api("DELETE", `/v1/sandboxes/${sandboxID}`).catch(() => {});
  await browser?.close();
});

/** type sends keys to the visible terminal. */
async function type(p: Page, text: string): Promise<void> {
  await p.locator(".terminal-wrap:not([hidden]) .xterm-helper-textarea").focus();
  await p.keyboard.type(text);
}

/** lines are the terminal's lines, right-trimmed. */
async function lines(p: Page): Promise<string[]> {
  return (await terminalText(p)).split("\n").map((l) => l.trimEnd());
}

async function waitLine(p: Page, line: string): Promise<void> {
  await until(`terminal line ${JSON.stringify(line)}`, async () => (await lines(p)).includes(line));
}

describe("sandboxes", () => {
  test("create a sandbox from the page", async () => {
    await page.getByRole("link", { name: "Sandboxes" }).click();
    await page.getByRole("heading", { name: "Sandboxes" }).waitFor();
    if (env.template) await page.getByLabel("Template").fill(env.template);
    await page.getByRole("button", { name: "Create sandbox" }).click();
    await page.waitForURL(/\/sandboxes\/sb_[^/]+$/);
    sandboxID = decodeURIComponent(new URL(page.url()).pathname.split("/").pop() ?? "");
    await page.getByRole("heading", { name: sandboxID }).waitFor();
    await page.goBack();
    await page.locator(`tr[data-sandbox="${sandboxID}"]`).waitFor();
    await screenshot(page, "19-sandboxes");
    await page.locator(`tr[data-sandbox="${sandboxID}"] a`).click();
    await page.getByRole("heading", { name: sandboxID }).waitFor();
  });

  test("a new shell: type echo hello and see it", async () => {
    await page.getByRole("button", { name: "+ New shell" }).click();
    await page.locator(".terminal-wrap:not([hidden]) .conn-open").waitFor();
    await type(page, "echo hello\n");
    await waitLine(page, "hello");
    await screenshot(page, "20-terminal");
  });

  test("a reload mid-output loses nothing: the tab reattaches and replays", async () => {
    await type(page, "for i in $(seq 1 40); do echo t$i; sleep 0.1; done; echo t-done\n");
    await waitLine(page, "t5");
    await page.reload();
    await page.locator(".terminal-wrap:not([hidden]) .conn-open").waitFor();
    await waitLine(page, "t-done");
    const got = (await lines(page)).filter((l) => /^t(\d+|-done)$/.test(l));
    expect(got).toEqual([...Array.from({ length: 40 }, (_, i) => `t${i + 1}`), "t-done"]);
    // The echo from before the reload is still there too.
    expect(await lines(page)).toContain("hello");
  });

  test("a dropped connection is redialed from its offset: no loss, no repeat", async () => {
    if (!env.dropURL) return;
    await type(page, "for i in $(seq 1 40); do echo d$i; sleep 0.1; done; echo d-done\n");
    await waitLine(page, "d3");
    expect(await drop()).toBeGreaterThan(0);
    await waitLine(page, "d-done");
    const got = (await lines(page)).filter((l) => /^d(\d+|-done)$/.test(l));
    expect(got).toEqual([...Array.from({ length: 40 }, (_, i) => `d${i + 1}`), "d-done"]);
    // And typing works on the new connection.
    await type(page, "echo after-drop\n");
    await waitLine(page, "after-drop");
  });

  test("the terminal follows the window size", async () => {
    await type(page, "stty size\n");
    const before = await sizeLine(page);
    await page.setViewportSize({ width: 800, height: 600 });
    await until("a smaller terminal", async () => {
      await type(page, "stty size\n");
      const after = await sizeLine(page).catch(() => null);
      return after !== null && after[1] < before[1];
    });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("several terminals as tabs", async () => {
    await page.getByRole("button", { name: "+ New shell" }).click();
    await until("two tabs", async () => (await page.locator(".ttab").count()) === 2);
    await page.locator(".terminal-wrap:not([hidden]) .conn-open").waitFor();
    await type(page, "echo second-tab\n");
    await waitLine(page, "second-tab");
    expect(await lines(page)).not.toContain("hello");
    await page.locator(".ttab-title").first().click();
    await type(page, "echo first-tab\n");
    await waitLine(page, "first-tab");
    expect(await lines(page)).not.toContain("second-tab");
    await screenshot(page, "21-terminal-tabs");
  });

  test("files: browse, view with colour, upload, download", async () => {
    await type(page, "printf 'def greet(name):\\n    return \"hi \" + name\\n' > /workspace/hello.py; echo written\n");
    await waitLine(page, "written");
    await page.getByRole("tab", { name: "Files" }).click();
    await page.locator(".file-name", { hasText: "hello.py" }).click();
    const viewer = page.getByTestId("file-viewer");
    await viewer.locator(".hljs-keyword").first().waitFor();
    expect(await viewer.textContent()).toContain('return "hi " + name');
    await screenshot(page, "22-files");

    await page.getByTestId("upload-input").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("uploaded from the browser\n") });
    await page.locator(".file-name", { hasText: "notes.txt" }).waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download notes.txt" }).click()]);
    expect(readFileSync(await download.path(), "utf8")).toBe("uploaded from the browser\n");
    // And the sandbox really has it.
    await page.getByRole("tab", { name: "Terminal" }).click();
    await type(page, "cat /workspace/notes.txt\n");
    await waitLine(page, "uploaded from the browser");
  });

  test("delete the sandbox", async () => {
    await page.getByRole("button", { name: "Delete sandbox" }).click();
    await page.waitForURL(/\/sandboxes$/);
    await until("the sandbox to leave the list", async () => (await page.locator(`tr[data-sandbox="${sandboxID}"]`).count()) === 0);
    await screenshot(page, "23-sandboxes");
    sandboxID = "";
    expect(problems).toEqual([]);
  });
});

describe("desktop", () => {
  test("a sandbox with a desktop gets the Desktop tab: start it, see noVNC connected", async () => {
    const plain = await api<{ id: string }>("POST", "/v1/sandboxes", env.template ? { template: env.template } : {});
    try {
      // A sandbox without a desktop has no tab.
      await page.goto(`${env.url}/sandboxes/${plain.id}`);
      await page.getByRole("tab", { name: "Terminal" }).waitFor();
      await page.getByRole("tab", { name: "Files" }).waitFor();
      expect(await page.getByRole("tab", { name: "Desktop" }).count()).toBe(0);
    } finally {
      await api("DELETE", `/v1/sandboxes/${plain.id}`);
    }
    if (!env.desktopTemplate) return; // opt-in: CORRAL_E2E_DESKTOP=1
    const sb = await api<{ id: string }>("POST", "/v1/sandboxes", { template: env.desktopTemplate });
    try {
      await page.goto(`${env.url}/sandboxes/${sb.id}`);
      await page.getByRole("tab", { name: "Desktop" }).click();
      await page.getByRole("button", { name: "Start the desktop" }).click();
      const frame = page.frameLocator('iframe[title="Sandbox desktop"]');
      await frame.locator("canvas").first().waitFor({ timeout: 60_000 });
      // noVNC says "Connected" in its status once the VNC handshake is done.
      await until("noVNC connected", async () => (await frame.locator("html").getAttribute("class").catch(() => ""))?.includes("noVNC_connected") ?? false);
      await screenshot(page, "24-desktop");
    } finally {
      await api("DELETE", `/v1/sandboxes/${sb.id}`);
    }
  });
});

/** sizeLine finds the last "rows cols" line stty printed. */
async function sizeLine(p: Page): Promise<[number, number]> {
  let found: [number, number] | null = null;
  await until("stty's answer", async () => {
    for (const l of (await lines(p)).reverse()) {
      const m = /^(\d+) (\d+)$/.exec(l);
      if (m) {
        found = [Number(m[1]), Number(m[2])];
        return true;
      }
    }
    return false;
  });
  if (!found) throw new Error("no size");
  return found;
}
