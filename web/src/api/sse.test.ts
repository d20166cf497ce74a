import { describe, expect, test, vi } from "vitest";
import { openStream, SSEParser, type SSEMessage, type StreamState } from "./sse";
import { problem, sseEvent, sseResponse } from "../test/fakes";

describe("SSEParser", () => {
  const stream = "id: 1\nevent: job.state\ndata: {\"a\":1}\n\n: ping\n\nid: 2\r\nevent: message\r\ndata: line one\r\ndata: line two\r\n\r\ndata:no-space\n\n";
  const want: SSEMessage[] = [
    { id: "1", event: "job.state", data: '{"a":1}' },
    { id: "2", event: "message", data: "line one\nline two" },
    { id: null, event: "message", data: "no-space" },
  ];

  test("whole stream", () => {
    expect(new SSEParser().feed(stream)).toEqual(want);
  });

  test.each([1, 2, 3, 5, 7, 13])("chunks of %i characters", (n) => {
    const p = new SSEParser();
    const got: SSEMessage[] = [];
    for (let i = 0; i < stream.length; i += n) got.push(...p.feed(stream.slice(i, i + n)));
    expect(got).toEqual(want);
  });

  test("a CR at a chunk's end waits for its LF", () => {
    const p = new SSEParser();
    expect(p.feed("data: x\r")).toEqual([]);
    expect(p.feed("\n\r\n")).toEqual([{ id: null, event: "message", data: "x" }]);
  });

  test("comments and unknown fields alone make no message", () => {
    expect(new SSEParser().feed(": heartbeat\n\nretry: 10\nfoo: bar\n\n")).toEqual([]);
  });

  test("an incomplete last message is held back", () => {
    const p = new SSEParser();
    expect(p.feed("data: half")).toEqual([]);
    expect(p.feed("\n\n")).toEqual([{ id: null, event: "message", data: "half" }]);
  });
});

/** fetches returns a fetch that answers each call with the next response and records the URLs. */
function fetches(answers: (() => Response | Promise<Response>)[]): { fetch: typeof fetch; urls: string[]; headers: Headers[] } {
  const urls: string[] = [];
  const headers: Headers[] = [];
  const f = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    urls.push(String(input));
    headers.push(new Headers(init?.headers));
    const next = answers.shift();
    if (!next) return new Promise<Response>(() => {}); // hangs: the test is over
    return next();
  });
  return { fetch: f as unknown as typeof fetch, urls, headers };
}

function waitFor(cond: () => boolean): Promise<void> {
  return vi.waitFor(() => {
    if (!cond()) throw new Error("not yet");
  }, { timeout: 3000, interval: 5 });
}

describe("openStream", () => {
  test("resumes after the last id on a dropped connection, then ends when done", async () => {
    const first = sseResponse([sseEvent(1, "job.state", { seq: 1 }), sseEvent(2, "message", { seq: 2 })]);
    const second = sseResponse([sseEvent(3, "job.state", { seq: 3 })], { end: true });
    const f = fetches([() => first.response, () => second.response]);
    let last = 0;
    const got: string[] = [];
    const states: StreamState["kind"][] = [];
    openStream({
      url: () => `/v1/jobs/j/events?after=${last}`,
      token: "crl_t",
      fetchImpl: f.fetch,
      onMessage: (m) => {
        got.push(m.data);
        last = Number(m.id);
      },
      onState: (s) => states.push(s.kind),
      done: () => last === 3,
    });
    await waitFor(() => got.length === 2);
    first.error(new TypeError("network error"));
    await waitFor(() => states.includes("ended"));
    expect(f.urls).toEqual(["/v1/jobs/j/events?after=0", "/v1/jobs/j/events?after=2"]);
    expect(got.map((d) => (JSON.parse(d) as { seq: number }).seq)).toEqual([1, 2, 3]);
    expect(f.headers[0]?.get("Authorization")).toBe("Bearer crl_t");
    expect(f.headers[0]?.get("Accept")).toBe("text/event-stream");
    expect(states).toEqual(["connecting", "open", "reconnecting", "open", "ended"]);
  });

  test("a clean end that is not done reconnects", async () => {
    const f = fetches([() => sseResponse([sseEvent(1, "x", 1)], { end: true }).response, () => sseResponse([sseEvent(2, "x", 2)], { end: true }).response]);
    let n = 0;
    openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => n++, done: () => n === 2 });
    await waitFor(() => n === 2);
    expect(f.urls.length).toBe(2);
  });

  test("401 stops and logs out", async () => {
    const f = fetches([() => problem(401, "a valid bearer token is required")]);
    const onUnauthorized = vi.fn();
    const states: StreamState[] = [];
    openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => {}, onState: (s) => states.push(s), onUnauthorized });
    await waitFor(() => onUnauthorized.mock.calls.length === 1);
    const last = states[states.length - 1];
    expect(last?.kind).toBe("failed");
    expect(f.urls.length).toBe(1);
  });

  test("404 fails for good with the server's detail", async () => {
    const f = fetches([() => problem(404, 'job "j" not found')]);
    const states: StreamState[] = [];
    openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => {}, onState: (s) => states.push(s) });
    await waitFor(() => states.some((s) => s.kind === "failed"));
    const failed = states.find((s) => s.kind === "failed");
    expect(failed && failed.kind === "failed" ? failed.error.message : "").toBe('job "j" not found');
  });

  test("503 and network errors are retried", async () => {
    const f = fetches([
      () => problem(503, "sandbox is starting"),
      () => Promise.reject(new TypeError("Failed to fetch")),
      () => sseResponse([sseEvent(1, "x", 1)], { end: true }).response,
    ]);
    let n = 0;
    openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => n++, done: () => n === 1 });
    await waitFor(() => n === 1);
    expect(f.urls.length).toBe(3);
  });

  test("a silent connection is redialed (no heartbeat within idleMs)", async () => {
    const silent = sseResponse([]);
    const f = fetches([() => silent.response, () => sseResponse([sseEvent(1, "x", 1)], { end: true }).response]);
    let n = 0;
    openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => n++, done: () => n === 1, idleMs: 50 });
    await waitFor(() => n === 1);
    expect(f.urls.length).toBe(2);
  });

  test("stop ends everything", async () => {
    const s = sseResponse([sseEvent(1, "x", 1)]);
    const f = fetches([() => s.response]);
    let n = 0;
    const stop = openStream({ url: () => "/s", token: "t", fetchImpl: f.fetch, onMessage: () => n++ });
    await waitFor(() => n === 1);
    stop();
    // Delivered after stop: ignored.
    try {
      s.push(sseEvent(2, "x", 2));
    } catch {
      // the stream was cancelled: fine too
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(n).toBe(1);
    expect(f.urls.length).toBe(1);
  });
});
