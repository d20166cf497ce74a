// Component tests of whole pages against a fetch that answers like the
// control plane (JSON, problem+json, SSE).
import { act, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { App } from "../app/App";
import { json, problem, sseEvent, sseResponse } from "../test/fakes";
import type { Job } from "../api/types";

type Handler = (url: URL, init: RequestInit | undefined) => Response | Promise<Response>;

let routes: [string, RegExp, Handler][] = [];
const seen: string[] = [];

function on(method: string, path: RegExp, h: Handler): void {
  routes.push([method, path, h]);
}

beforeEach(() => {
  routes = [];
  seen.length = 0;
  vi.stubGlobal(
    "fetch",
    vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(String(input), "http://corral.test");
      const method = init?.method ?? "GET";
      seen.push(`${method} ${url.pathname}${url.search}`);
      const auth = new Headers(init?.headers).get("Authorization");
      if (auth !== "Bearer crl_good_token") return problem(401, "a valid bearer token is required");
      for (const [m, re, h] of routes) if (m === method && re.test(url.pathname)) return h(url, init);
      return problem(404, `no route for ${method} ${url.pathname}`);
    }),
  );
  window.history.replaceState(null, "", "/");
});

afterEach(() => {
  vi.unstubAllGlobals();
});

function job(id: string, status: string, task = "task " + id): Job {
  return { id, task, agent: "script", status, created_at: "2026-01-01T00:00:00Z", started_at: null, finished_at: null, result: null, labels: {} };
}

describe("login", () => {
  test("a refused token reads as a sentence; a good one opens the jobs", async () => {
    on("GET", /^\/v1\/jobs$/, () => json(200, { jobs: [] }));
    on("GET", /^\/v1\/events$/, () => sseResponse([]).response);
    render(<App />);
    fireEvent.change(screen.getByLabelText("Access token"), { target: { value: "crl_bad_token" } });
    fireEvent.click(screen.getByRole("button", { name: "Log in" }));
    await screen.findByText(/Logging in failed: Your token was not accepted/);
    expect(sessionStorage.getItem("corral.token")).toBeNull();

    fireEvent.change(screen.getByLabelText("Access token"), { target: { value: "crl_good_token" } });
    fireEvent.click(screen.getByRole("button", { name: "Log in" }));
    await screen.findByRole("heading", { name: "Jobs" });
    expect(sessionStorage.getItem("corral.token")).toBe("crl_good_token");
    expect(localStorage.getItem("corral.token")).toBeNull();
    await screen.findByText(/No jobs yet/);
  });

  test("not a token at all is refused before asking the server", async () => {
    render(<App />);
    fireEvent.change(screen.getByLabelText("Access token"), { target: { value: "short" } });
    fireEvent.click(screen.getByRole("button", { name: "Log in" }));
    await screen.findByText(/does not look like a token/);
    expect(seen).toEqual([]);
  });

  test("a token revoked while logged in logs out with a notice", async () => {
    sessionStorage.setItem("corral.token", "crl_revoked_token");
    window.history.replaceState(null, "", "/jobs/job_1");
    render(<App />);
    await screen.findByText(/Your token was not accepted \(it may have been revoked\)/);
    expect(screen.getByLabelText("Access token")).toBeTruthy();
    expect(sessionStorage.getItem("corral.token")).toBeNull();
    expect(window.location.pathname + window.location.search).toBe("/login?next=%2Fjobs%2Fjob_1");
  });
});

describe("jobs list", () => {
  test("state changes arrive over /v1/events: the list follows without a second GET", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs");
    const events = sseResponse([]);
    on("GET", /^\/v1\/events$/, () => events.response);
    on("GET", /^\/v1\/jobs$/, () => json(200, { jobs: [job("job_a", "running"), job("job_b", "pending")] }));
    on("GET", /^\/v1\/jobs\/job_c$/, () => json(200, job("job_c", "pending", "a brand new job")));
    on("GET", /^\/v1\/jobs\/job_a$/, () => json(200, { ...job("job_a", "completed"), result: { exit_code: 0 } }));
    render(<App />);
    await screen.findByText("task job_a");
    await act(async () => {
      events.push(sseEvent(null, "job.state", { job_id: "job_b", seq: 3, time: "2026-01-01T00:00:01Z", from: "pending", to: "creating" }));
      events.push(sseEvent(null, "job.state", { job_id: "job_c", seq: 1, time: "2026-01-01T00:00:02Z", from: "", to: "pending" }));
      events.push(sseEvent(null, "job.state", { job_id: "job_a", seq: 9, time: "2026-01-01T00:00:03Z", from: "running", to: "completed" }));
    });
    await waitFor(() => expect(document.querySelector('tr[data-job="job_b"] [data-status]')?.getAttribute("data-status")).toBe("creating"));
    await screen.findByText("a brand new job");
    await waitFor(() => expect(document.querySelector('tr[data-job="job_a"] [data-status]')?.getAttribute("data-status")).toBe("completed"));
    expect(seen.filter((s) => s.startsWith("GET /v1/jobs?")).length).toBe(1); // no polling
    expect(screen.getByTestId("stream-state").textContent).toBe("Live");
  });

  test("filters: status, agent and text", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs?status=active&q=deploy");
    on("GET", /^\/v1\/events$/, () => sseResponse([]).response);
    on("GET", /^\/v1\/jobs$/, () => json(200, { jobs: [job("j1", "running", "deploy site"), job("j2", "completed", "deploy api"), job("j3", "running", "test")] }));
    render(<App />);
    await screen.findByText("deploy site");
    expect(screen.queryByText("deploy api")).toBeNull();
    expect(screen.queryByText("test")).toBeNull();
  });
});

describe("job page", () => {
  test("the timeline renders each event type for people and the status follows it", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_1");
    let done = false;
    on("GET", /^\/v1\/jobs\/job_1$/, () => json(200, { ...job("job_1", done ? "completed" : "running", "Fix the test"), agent: "builtin", sandbox_id: "sb_1" }));
    on("GET", /^\/v1\/sandboxes\/sb_1\/desktop\/status$/, () => problem(404, "no desktop"));
    const stream = sseResponse([
      sseEvent(1, "job.state", { seq: 1, job_id: "job_1", time: "2026-01-01T00:00:00Z", type: "job.state", data: { from: "", to: "running" } }),
      sseEvent(2, "message", { seq: 2, job_id: "job_1", time: "2026-01-01T00:00:01Z", type: "message", data: { role: "user", text: "please fix it" } }),
      sseEvent(3, "agent.thought", { seq: 3, job_id: "job_1", time: "2026-01-01T00:00:02Z", type: "agent.thought", data: { text: "looking at the test" } }),
      sseEvent(4, "tool.call", { seq: 4, job_id: "job_1", time: "2026-01-01T00:00:03Z", type: "tool.call", data: { call_id: "c1", tool: "bash", input: { command: "go test ./..." } } }),
      sseEvent(5, "tool.result", { seq: 5, job_id: "job_1", time: "2026-01-01T00:00:04Z", type: "tool.result", data: { call_id: "c1", output: "FAIL x_test.go", exit_code: 1 } }),
      sseEvent(6, "raw", { seq: 6, job_id: "job_1", time: "2026-01-01T00:00:05Z", type: "raw", data: { type: "system", subtype: "init" } }),
      sseEvent(7, "error", { seq: 7, job_id: "job_1", time: "2026-01-01T00:00:06Z", type: "error", data: { message: "the model refused" } }),
    ]);
    on("GET", /^\/v1\/jobs\/job_1\/events$/, () => stream.response);
    render(<App />);
    await screen.findByText("please fix it");
    expect(screen.getByText("looking at the test")).toBeTruthy();
    const tool = document.querySelector("details.tl-tool") as HTMLDetailsElement;
    expect(tool.open).toBe(false); // collapsed until asked
    expect(tool.querySelector(".tool-input")?.textContent).toBe("go test ./...");
    expect(tool.querySelector(".tool-status")?.textContent).toBe("exit 1");
    expect(tool.textContent).toContain("FAIL x_test.go");
    expect(screen.getByText("agent event")).toBeTruthy();
    expect(screen.getByRole("alert").textContent).toContain("the model refused");
    // A message box for an agent that takes them.
    expect(screen.getByLabelText("Message to the agent")).toBeTruthy();

    done = true;
    await act(async () => {
      stream.push(sseEvent(8, "job.state", { seq: 8, job_id: "job_1", time: "2026-01-01T00:00:07Z", type: "job.state", data: { from: "running", to: "completed" } }));
      stream.close();
    });
    await waitFor(() => expect(document.querySelector(".job-meta [data-status]")?.getAttribute("data-status")).toBe("completed"));
    await screen.findByText(/Ended · 8 events/);
    expect(seen.filter((s) => s.startsWith("GET /v1/jobs/job_1/events")).length).toBe(1); // ended: no reconnect
    expect(screen.queryByLabelText("Message to the agent")).toBeNull();
  });

  test("a read of the job that is older than the stream never moves the status back", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_5");
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    on("GET", /^\/v1\/jobs\/job_5$/, async () => {
      await slow; // answered after the stream already said "completed"
      return json(200, job("job_5", "running"));
    });
    on("GET", /^\/v1\/jobs\/job_5\/events$/, () =>
      sseResponse(
        [
          sseEvent(1, "job.state", { seq: 1, job_id: "job_5", time: "2026-01-01T00:00:00Z", type: "job.state", data: { from: "creating", to: "running" } }),
          sseEvent(2, "job.state", { seq: 2, job_id: "job_5", time: "2026-01-01T00:00:01Z", type: "job.state", data: { from: "running", to: "completed" } }),
        ],
        { end: true },
      ).response,
    );
    render(<App />);
    await waitFor(() => expect(seen).toContain("GET /v1/jobs/job_5/events?after=0"));
    await act(() => new Promise((r) => setTimeout(r, 50))); // the stream is read to its end
    release();
    await waitFor(() => expect(document.querySelector(".job-meta [data-status]")?.getAttribute("data-status")).toBe("completed"));
  });

  test("a first read that answers after the stream said \"running\" is read again for the sandbox", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_6?tab=terminal");
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    let reads = 0;
    on("GET", /^\/v1\/jobs\/job_6$/, async () => {
      reads++;
      if (reads === 1) {
        await slow; // read while the job was still being created
        return json(200, job("job_6", "creating"));
      }
      return json(200, { ...job("job_6", "running"), sandbox_id: "sb_6" });
    });
    on("GET", /desktop\/status$/, () => problem(404, "no desktop"));
    on("GET", /^\/v1\/sandboxes\/sb_6\/processes$/, () => json(200, { processes: [] }));
    on("GET", /^\/v1\/jobs\/job_6\/events$/, () =>
      sseResponse([sseEvent(1, "job.state", { seq: 1, job_id: "job_6", time: "2026-01-01T00:00:00Z", type: "job.state", data: { from: "creating", to: "running" } })]).response,
    );
    render(<App />);
    await waitFor(() => expect(seen).toContain("GET /v1/jobs/job_6/events?after=0"));
    await act(() => new Promise((r) => setTimeout(r, 50))); // the stream said "running"
    release();
    await screen.findByRole("button", { name: "+ New shell" });
    expect(reads).toBe(2);
    expect(document.querySelector(".job-meta [data-status]")?.getAttribute("data-status")).toBe("running");
  });

  test("a re-read that fails is tried again until the job's sandbox is known", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_7?tab=terminal");
    let reads = 0;
    on("GET", /^\/v1\/jobs\/job_7$/, () => {
      reads++;
      if (reads === 1) return json(200, job("job_7", "creating"));
      if (reads === 2) return problem(503, "the store is busy");
      return json(200, { ...job("job_7", "running"), sandbox_id: "sb_7" });
    });
    on("GET", /desktop\/status$/, () => problem(404, "no desktop"));
    on("GET", /^\/v1\/sandboxes\/sb_7\/processes$/, () => json(200, { processes: [] }));
    const stream = sseResponse([]);
    on("GET", /^\/v1\/jobs\/job_7\/events$/, () => stream.response);
    render(<App />);
    await screen.findByText("Waiting for the job's sandbox…");
    await act(async () => {
      stream.push(sseEvent(1, "job.state", { seq: 1, job_id: "job_7", time: "2026-01-01T00:00:00Z", type: "job.state", data: { from: "creating", to: "running" } }));
    });
    await screen.findByRole("button", { name: "+ New shell" }, { timeout: 3000 });
    expect(reads).toBe(3);
  });

  test("sending a message shows the server's refusal as a sentence", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_2");
    on("GET", /^\/v1\/jobs\/job_2$/, () => json(200, { ...job("job_2", "running"), agent: "codex", sandbox_id: "sb_2" }));
    on("GET", /desktop\/status$/, () => problem(404, "no desktop"));
    on("GET", /^\/v1\/jobs\/job_2\/events$/, () => sseResponse([]).response);
    on("POST", /^\/v1\/jobs\/job_2\/messages$/, (_u, init) => {
      expect(JSON.parse(String(init?.body))).toEqual({ text: "stop that" });
      return problem(409, 'job "job_2" is already completed');
    });
    render(<App />);
    const box = await screen.findByLabelText("Message to the agent");
    fireEvent.change(box, { target: { value: "stop that" } });
    fireEvent.keyDown(box, { key: "Enter" });
    await screen.findByText('Sending the message failed: Job "job_2" is already completed.');
    expect((box as HTMLTextAreaElement).value).toBe("stop that"); // kept for another try
  });

  test("a message the server takes (202, no body) clears the box", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_4");
    on("GET", /^\/v1\/jobs\/job_4$/, () => json(200, { ...job("job_4", "running"), agent: "builtin", sandbox_id: "sb_4" }));
    on("GET", /desktop\/status$/, () => problem(404, "no desktop"));
    on("GET", /^\/v1\/jobs\/job_4\/events$/, () => sseResponse([]).response);
    on("POST", /^\/v1\/jobs\/job_4\/messages$/, () => new Response(null, { status: 202 }));
    render(<App />);
    const box = (await screen.findByLabelText("Message to the agent")) as HTMLTextAreaElement;
    fireEvent.change(box, { target: { value: "go on" } });
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    await waitFor(() => expect(box.value).toBe(""));
    expect(document.querySelector(".note-error")).toBeNull();
  });

  test("the desktop tab appears only when the sandbox has one", async () => {
    sessionStorage.setItem("corral.token", "crl_good_token");
    window.history.replaceState(null, "", "/jobs/job_3?tab=desktop");
    on("GET", /^\/v1\/jobs\/job_3$/, () => json(200, { ...job("job_3", "running"), sandbox_id: "sb_3" }));
    on("GET", /^\/v1\/sandboxes\/sb_3\/desktop\/status$/, () => json(200, { running: false, vnc: false }));
    on("POST", /^\/v1\/sandboxes\/sb_3\/desktop\/start$/, () => json(200, { running: true, vnc: true, display: ":1", width: 1280, height: 800 }));
    on("GET", /^\/v1\/jobs\/job_3\/events$/, () => sseResponse([]).response);
    render(<App />);
    fireEvent.click(await screen.findByRole("button", { name: "Start the desktop" }));
    const frame = (await screen.findByTitle("Sandbox desktop")) as HTMLIFrameElement;
    expect(frame.src).toContain("/v1/sandboxes/sb_3/desktop/novnc/vnc.html?");
    expect(seen).toContain("POST /v1/sandboxes/sb_3/desktop/start");
    expect(frame.src).toContain("access_token=crl_good_token");
    expect(screen.getByRole("tab", { name: "Desktop" })).toBeTruthy();
  });
});
