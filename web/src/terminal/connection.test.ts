import { beforeEach, describe, expect, test, vi } from "vitest";
import { TerminalConnection, type ConnectionState, type ProbeResult } from "./connection";
import { FakeSocket } from "../test/fakes";

function setup(opts: { probe?: () => Promise<ProbeResult>; pty?: boolean } = {}) {
  const out: string[] = [];
  const states: ConnectionState[] = [];
  const truncated: [number, boolean][] = [];
  const exits: [number | null, string | null][] = [];
  const refused: string[] = [];
  const dec = new TextDecoder();
  const conn = new TerminalConnection({
    url: (offset) => `ws://x/connect?offset=${offset}`,
    WebSocketImpl: FakeSocket as unknown as typeof WebSocket,
    onOutput: (d, stream) => out.push(`${stream}:${dec.decode(d)}`),
    onTruncated: (from, initial) => truncated.push([from, initial]),
    onExit: (c, s) => exits.push([c, s]),
    onRefused: (d) => refused.push(d),
    onState: (s) => states.push(s),
    backoff: { min: 1, max: 5 },
    pty: opts.pty ?? true,
    ...(opts.probe ? { probe: opts.probe } : {}),
  });
  return { conn, out, states, truncated, exits, refused };
}

async function nextSocket(n: number): Promise<FakeSocket> {
  await vi.waitFor(() => {
    if (FakeSocket.all.length < n) throw new Error("no redial yet");
  }, { timeout: 2000, interval: 2 });
  return FakeSocket.all[n - 1] as FakeSocket;
}

beforeEach(() => FakeSocket.reset());

describe("TerminalConnection", () => {
  test("asks for offset 0 first and counts the bytes of both streams", () => {
    const t = setup();
    const ws = FakeSocket.last();
    expect(ws.url).toBe("ws://x/connect?offset=0");
    expect(ws.binaryType).toBe("arraybuffer");
    ws.open();
    ws.output(1, "hello ");
    ws.output(2, "err");
    expect(t.out).toEqual(["1:hello ", "2:err"]);
    expect(t.conn.offset).toBe(9);
  });

  test("redials from its offset after a drop: nothing lost, nothing twice", async () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    a.output(1, "abc");
    a.drop();
    const b = await nextSocket(2);
    expect(b.url).toBe("ws://x/connect?offset=3");
    b.open();
    b.output(1, "def");
    expect(t.out.join("")).toBe("1:abc1:def");
    expect(t.states).toEqual(["connecting", "open", "reconnecting", "open"]);
  });

  test("a truncated start says so once, and offsets continue from it", async () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    a.control({ type: "truncated", from: 1000 });
    a.output(1, "xy");
    expect(t.truncated).toEqual([[1000, true]]);
    expect(t.conn.offset).toBe(1002);
    a.drop();
    const b = await nextSocket(2);
    expect(b.url).toBe("ws://x/connect?offset=1002");
    b.open();
    b.control({ type: "truncated", from: 5000 }); // the gap left the window
    expect(t.truncated).toEqual([[1000, true], [5000, false]]);
    expect(t.conn.offset).toBe(5000);
  });

  test("input typed while reconnecting is sent on the new connection, in order", async () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    t.conn.send("ls");
    a.drop();
    t.conn.send(" -l\r");
    const b = await nextSocket(2);
    b.open();
    expect(a.input()).toBe("ls");
    expect(b.input()).toBe(" -l\r");
  });

  test("the size is sent on open and again after a redial, never twice in a row", async () => {
    const t = setup();
    t.conn.resize(30, 100); // before open: remembered
    const a = FakeSocket.last();
    a.open();
    t.conn.resize(30, 100);
    t.conn.resize(40, 120);
    expect(a.texts()).toEqual([{ type: "resize", rows: 30, cols: 100 }, { type: "resize", rows: 40, cols: 120 }]);
    a.drop();
    const b = await nextSocket(2);
    b.open();
    expect(b.texts()).toEqual([{ type: "resize", rows: 40, cols: 120 }]);
  });

  test("no resize for a process without a PTY, nor out of range", () => {
    const t = setup({ pty: false });
    const a = FakeSocket.last();
    a.open();
    t.conn.resize(30, 100);
    const u = setup();
    const b = FakeSocket.last();
    b.open();
    u.conn.resize(0, 80);
    u.conn.resize(24, 100000);
    expect(a.texts()).toEqual([]);
    expect(b.texts()).toEqual([]);
  });

  test("the exit frame ends it: no redial", async () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    a.control({ type: "exit", exit_code: 3, signal: null });
    a.close();
    expect(t.exits).toEqual([[3, null]]);
    expect(t.states[t.states.length - 1]).toBe("exited");
    await new Promise((r) => setTimeout(r, 20));
    expect(FakeSocket.all.length).toBe(1);
  });

  test("a refused frame is reported and the connection stays", () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    a.control({ type: "error", detail: "process has no stdin" });
    a.control({ type: "brand-new-frame" });
    a.control("not even an object");
    expect(t.refused).toEqual(["process has no stdin"]);
    expect(t.conn.state).toBe("open");
  });

  test("a process that is gone stops the redials", async () => {
    const probe = vi.fn(async (): Promise<ProbeResult> => "gone");
    const t = setup({ probe });
    const a = FakeSocket.last();
    a.open();
    a.drop();
    await vi.waitFor(() => {
      if (t.conn.state !== "gone") throw new Error(t.conn.state);
    });
    expect(FakeSocket.all.length).toBe(1);
    expect(probe).toHaveBeenCalledTimes(1);
  });

  test("close stops it and leaves the process alone", () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    t.conn.close();
    expect(a.readyState).toBe(3);
    expect(a.texts()).toEqual([]); // no signal, no close_stdin
    expect(t.conn.state).toBe("closed");
    t.conn.send("ignored");
    expect(a.input()).toBe("");
  });

  test("large input goes in frames of at most 16 KiB", () => {
    const t = setup();
    const a = FakeSocket.last();
    a.open();
    t.conn.send("x".repeat(40_000));
    const sizes = a.sent.filter((s): s is Uint8Array => typeof s !== "string").map((b) => b.length);
    expect(sizes).toEqual([16384, 16384, 7232]);
  });

  test("multi-byte characters split across frames reach the terminal whole", () => {
    // xterm decodes UTF-8 across writes; the connection must pass bytes
    // through untouched, never decode per frame.
    const bytes: number[] = [];
    const conn = new TerminalConnection({
      url: () => "ws://x",
      WebSocketImpl: FakeSocket as unknown as typeof WebSocket,
      onOutput: (d) => bytes.push(...d),
    });
    const a = FakeSocket.last();
    a.open();
    const euro = new TextEncoder().encode("€"); // 3 bytes
    for (const b of euro) {
      const f = new Uint8Array([1, b]);
      (a.onmessage as unknown as (e: unknown) => void)({ data: f.buffer });
    }
    expect(new TextDecoder().decode(new Uint8Array(bytes))).toBe("€");
    expect(conn.offset).toBe(3);
  });
});
