// Jobs end to end: log in, submit a script job from the form, watch it
// complete in the live timeline (surviving a reload and a dropped
// connection with no output lost or doubled), see the list change live,
// download the artifacts, cancel a running job, read the errors.

import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { api, drop, env, failureShot, launch, login, newContext, screenshot, until, watch } from "./harness";

interface Job {
  id: string;
  status: string;
}

let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let problems: string[];

beforeAll(async () => {
  browser = await launch();
  ctx = await newContext(browser);
  page = await ctx.newPage();
  problems = watch(page);
});

afterEach(async (ctx) => {
  await failureShot(page, ctx.task);
});

afterAll(async () => {
  await browser?.close();
});

/** lines makes a command that prints "<tag> 1".."<tag> n", pausing between them. */
function counting(tag: string, n: number, pause = "0.1"): string {
  return `for i in $(seq 1 ${n}); do echo "${tag} $i"; sleep ${pause}; done; echo "${tag} done"`;
}

async function outputText(p: Page): Promise<string> {
  const blocks = await p.locator("[data-testid=output]").allTextContents();
  return blocks.join("");
}

/** expectEveryLineOnce checks the output has tag 1..n each exactly once, in order. */
function expectEveryLineOnce(out: string, tag: string, n: number): void {
  const got = out.split("\n").filter((l) => l.startsWith(tag + " "));
  const want = [...Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`), `${tag} done`];
  expect(got).toEqual(want);
}

async function waitStatus(p: Page, status: string): Promise<void> {
  await p.locator(`.job-meta [data-status="${status}"]`).waitFor({ timeout: 120_000 });
}

async function submitScriptJob(p: Page, task: string, command: string, shot?: string): Promise<string> {
  await p.goto(env.url + "/jobs/new");
  await p.getByLabel("Task", { exact: true }).fill(task);
  await p.getByLabel("Command", { exact: true }).fill(command);
  if (env.template) {
    await p.getByText("Sandbox: runtime, template").click();
    await p.getByLabel("Template", { exact: true }).fill(env.template);
  }
  if (shot) await screenshot(p, shot);
  await p.getByRole("button", { name: "Submit job" }).click();
  await p.waitForURL(/\/jobs\/job_[^/]+$/);
  return decodeURIComponent(new URL(p.url()).pathname.split("/").pop() ?? "");
}

describe("jobs", () => {
  test("login refuses a bad token with a readable message, accepts the right one", async () => {
    await page.goto(env.url + "/");
    await page.getByLabel("Access token").waitFor();
    await screenshot(page, "01-login");
    await page.getByLabel("Access token").fill("crl_this_is_not_a_token");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByText("Your token was not accepted").waitFor();
    await login(page);
    await screenshot(page, "02-jobs");
  });

  test("a script job from the form completes live; a reload mid-stream loses nothing", async () => {
    const id = await submitScriptJob(page, "e2e: count to 30", counting("line", 30), "03-new-job");
    await until("the first lines", async () => (await outputText(page)).includes("line 5"));
    await screenshot(page, "04-job-running");
    // Reload while the job is still printing: the timeline replays the log
    // and follows on, with every line exactly once.
    await page.reload();
    await until("output after the reload", async () => (await outputText(page)).includes("line 1"));
    await waitStatus(page, "completed");
    expectEveryLineOnce(await outputText(page), "line", 30);
    await page.getByTestId("stream-state").filter({ hasText: "Ended" }).waitFor();
    // The timeline shows the states people care about.
    const states = await page.locator(".tl-state strong").allTextContents();
    expect(states).toContain("running");
    expect(states[states.length - 1]).toBe("completed");
    await screenshot(page, "05-job-completed");
    const job = await api<Job>("GET", `/v1/jobs/${id}`);
    expect(job.status).toBe("completed");
  });

  test("the timeline survives a dropped connection without losing or repeating output", async () => {
    if (!env.dropURL) return; // only the Go harness has the cutting proxy
    await submitScriptJob(page, "e2e: survive a drop", counting("drop", 40));
    await until("the first lines", async () => (await outputText(page)).includes("drop 3"));
    expect(await drop()).toBeGreaterThan(0);
    await waitStatus(page, "completed");
    expectEveryLineOnce(await outputText(page), "drop", 40);
  });

  test("the job list changes live, without reloading", async () => {
    await page.goto(env.url + "/jobs");
    await page.getByTestId("stream-state").filter({ hasText: "Live" }).waitFor();
    const job = await api<Job>("POST", "/v1/jobs", {
      task: "e2e: appears live",
      agent: "script",
      command: "sleep 1; echo ok",
      ...(env.template ? { template: env.template } : {}),
    });
    const row = page.locator(`tr[data-job="${job.id}"]`);
    await row.waitFor();
    await row.locator('[data-status="completed"]').waitFor({ timeout: 120_000 });
    await screenshot(page, "06-jobs-live");
    if (!env.dropURL) return;
    // After a dropped connection the list catches up and stays live.
    await drop();
    const next = await api<Job>("POST", "/v1/jobs", {
      task: "e2e: appears after a drop",
      agent: "script",
      command: "echo ok",
      ...(env.template ? { template: env.template } : {}),
    });
    await page.locator(`tr[data-job="${next.id}"] [data-status="completed"]`).waitFor({ timeout: 120_000 });
  });

  test("artifacts download as a zip holding the event log", async () => {
    await page.goto(env.url + "/jobs?status=completed");
    await page.locator("tr[data-job] a").first().click();
    await waitStatus(page, "completed");
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download artifacts" }).click()]);
    const file = await download.path();
    const zip = readFileSync(file);
    expect(zip.subarray(0, 2).toString()).toBe("PK");
    expect(zip.includes(Buffer.from("events.jsonl"))).toBe(true);
    expect(download.suggestedFilename()).toMatch(/^job_.*\.zip$/);
    // A job without a repository has no diff, and the page says why.
    await page.getByRole("tab", { name: "Changes" }).click();
    await page.getByText(/not a git repository/).waitFor();
    await screenshot(page, "07-job-changes");
  });

  test("a running job can be watched in a terminal and cancelled", async () => {
    const id = await submitScriptJob(page, "e2e: long job", "while true; do echo tick; sleep 1; done");
    await waitStatus(page, "running");
    await page.getByRole("tab", { name: "Terminal" }).click();
    // The job's own process is attached at first: its output is there.
    await until("the job's output in the terminal", async () => {
      const text = await page.locator(".terminal-wrap:not([hidden]) [data-testid=terminal]").evaluate((el) => (el as HTMLElement & { corralText?: () => string }).corralText?.() ?? "");
      return text.includes("tick");
    });
    await screenshot(page, "08-job-terminal");
    await page.getByRole("button", { name: "Cancel job" }).click();
    await waitStatus(page, "cancelled");
    await page.getByText(/its sandbox is gone/).waitFor();
    const job = await api<Job>("GET", `/v1/jobs/${id}`);
    expect(job.status).toBe("cancelled");
  });

  test("a built-in agent's job: its steps in the timeline, a message injected while it works", async () => {
    if (!env.model) return; // the Go harness serves a scripted model
    await page.goto(env.url + "/jobs/new");
    await page.getByLabel("Task", { exact: true }).fill("e2e: say hello, then wait for the go signal");
    await page.getByLabel("Agent").selectOption("builtin");
    await page.getByLabel("Model").fill(env.model);
    if (env.template) {
      await page.getByText("Sandbox: runtime, template").click();
      await page.getByLabel("Template", { exact: true }).fill(env.template);
    }
    await page.getByRole("button", { name: "Submit job" }).click();
    await page.waitForURL(/\/jobs\/job_[^/]+$/);
    // The model's words and its first tool call, still running.
    await page.getByText("I will wait for the go signal.").waitFor({ timeout: 60_000 });
    const first = page.locator("details.tl-tool").first();
    await first.locator(".tool-status", { hasText: "running…" }).waitFor();
    expect(await first.locator(".tool-input").textContent()).toContain("while [ ! -e /workspace/go ]");
    // A message typed now reaches the agent before its next step.
    const box = page.getByLabel("Message to the agent");
    await box.fill("please also say bye");
    await box.press("Enter");
    await page.locator(".tl-role-user .bubble-text", { hasText: "please also say bye" }).waitFor();
    await until("the box to clear once the message was taken", async () => (await box.inputValue()) === "");
    await screenshot(page, "12-agent-working");
    // Let the command finish, from a shell in the job's own sandbox.
    await page.getByRole("tab", { name: "Terminal" }).click();
    await page.getByRole("button", { name: "+ New shell" }).click();
    await page.locator(".terminal-wrap:not([hidden]) .conn-open").waitFor();
    await page.locator(".terminal-wrap:not([hidden]) .xterm-helper-textarea").focus();
    await page.keyboard.type("touch /workspace/go\n");
    await page.getByRole("tab", { name: /Timeline/ }).click();
    await waitStatus(page, "completed");
    const tools = page.locator("details.tl-tool");
    await until("three tool calls", async () => (await tools.count()) === 3);
    await tools.nth(0).locator("summary").click();
    expect(await tools.nth(0).locator(".code-block").last().textContent()).toContain("hello-from-agent");
    await tools.nth(1).locator("summary").click();
    expect(await tools.nth(1).locator(".code-block").last().textContent()).toContain("bye-from-agent");
    expect(await tools.nth(2).locator(".tool-name").textContent()).toBe("finish");
    await page.getByTestId("result").getByText("Said hello, then bye as asked.").waitFor();
    // The model's calls show as quiet lines with their token counts.
    expect(await page.locator(".tl-llm").count()).toBeGreaterThanOrEqual(3);
    await screenshot(page, "13-agent-completed");
  });

  test("API errors read as sentences", async () => {
    await page.goto(env.url + "/jobs/new");
    // Caught before the request: a script job needs a command.
    await page.getByLabel("Task", { exact: true }).fill("e2e: no command");
    await page.getByRole("button", { name: "Submit job" }).click();
    await page.getByText("A script job needs a command to run.").waitFor();
    // Refused by the server: the problem's detail is shown, not a status code.
    await page.getByLabel("Agent").selectOption("codex");
    await page.getByRole("button", { name: "Submit job" }).click();
    const note = page.locator(".note-error");
    await note.filter({ hasText: "codex" }).waitFor();
    expect(await note.textContent()).toMatch(/^Submitting the job failed: Agent "codex" is not available/);
    await screenshot(page, "09-error");
    // An unknown job.
    await page.goto(env.url + "/jobs/job_doesnotexist");
    await page.getByText(/Loading the job failed/).waitFor();
  });

  test("narrow screen and dark theme", async () => {
    const narrow = await newContext(browser, { width: 390, height: 844, dark: true });
    const p = await narrow.newPage();
    const probs = watch(p);
    await login(p);
    await expect(p.evaluate(() => document.documentElement.dataset["theme"])).resolves.toBe("dark");
    // Nothing spills sideways on a phone.
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(p, "10-jobs-narrow-dark");
    await p.locator("tr[data-job] a").first().click();
    await p.locator(".job-meta [data-status]").waitFor();
    await screenshot(p, "11-job-narrow-dark");
    // The theme button cycles: system → light.
    await p.getByRole("button", { name: /Theme/ }).click();
    await expect(p.evaluate(() => document.documentElement.dataset["theme"])).resolves.toBe("light");
    await narrow.close();
    expect(probs).toEqual([]);
  });

  test("logout forgets the token", async () => {
    await page.goto(env.url + "/jobs");
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("Access token").waitFor();
    const stored = await page.evaluate(() => [sessionStorage.getItem("corral.token"), localStorage.getItem("corral.token")]);
    expect(stored).toEqual([null, null]);
    await page.goto(env.url + "/jobs");
    await page.getByLabel("Access token").waitFor();
    expect(problems).toEqual([]);
  });
});
