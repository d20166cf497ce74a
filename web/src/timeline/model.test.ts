import { describe, expect, test } from "vitest";
import { parseEvent, Timeline, type Item } from "./model";
import type { JobEvent } from "../api/types";

let seq = 0;
function ev(type: string, data: unknown, s?: number): JobEvent {
  seq = s ?? seq + 1;
  return { seq, job_id: "job_1", time: "2026-01-01T00:00:00Z", type, data };
}

function kinds(items: Item[]): string[] {
  return items.map((i) => i.kind);
}

describe("Timeline", () => {
  test("folds a script job's log: states, one output block, artifact, final state", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("job.state", { from: "", to: "pending" }));
    t.add(ev("job.state", { from: "pending", to: "running" }));
    t.add(ev("process.output", { stream: "stdout", data: "a\n", offset: 0, bytes: 2 }));
    t.add(ev("process.output", { stream: "stdout", data: "b\n", offset: 2, bytes: 2 }));
    t.add(ev("process.output", { stream: "stderr", data: "oops\n", offset: 4, bytes: 5 }));
    t.add(ev("artifact", { name: "artifacts.zip", size: 401 }));
    t.add(ev("job.state", { from: "running", to: "completed" }));
    expect(kinds(t.items())).toEqual(["state", "state", "output", "artifact", "state"]);
    const out = t.items()[2];
    expect(out?.kind === "output" && out.chunks).toEqual([{ stream: "stdout", text: "a\nb\n" }, { stream: "stderr", text: "oops\n" }]);
    expect(out?.kind === "output" && out.bytes).toBe(9);
    expect(t.finalState).toEqual({ from: "running", to: "completed" });
    expect(t.lastSeq).toBe(7);
  });

  test("a replayed event is ignored (resume after a drop)", () => {
    seq = 0;
    const t = new Timeline();
    const e1 = ev("process.output", { stream: "stdout", data: "x", offset: 0, bytes: 1 });
    const e2 = ev("process.output", { stream: "stdout", data: "y", offset: 1, bytes: 1 });
    expect(t.add(e1)).toBe(true);
    expect(t.add(e2)).toBe(true);
    expect(t.add(e1)).toBe(false);
    expect(t.add(e2)).toBe(false);
    const out = t.items()[0];
    expect(out?.kind === "output" && out.chunks[0]?.text).toBe("xy");
    expect(t.count).toBe(2);
  });

  test("a gap in the output offsets is shown, not hidden", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("process.output", { stream: "stdout", data: "a", offset: 0, bytes: 1 }));
    t.add(ev("process.output", { stream: "stdout", data: "z", offset: 100, bytes: 1 }));
    const out = t.items()[0];
    expect(out?.kind === "output" && out.lost).toBe(99);
    expect(out?.kind === "output" && out.chunks.map((c) => c.stream)).toEqual(["stdout", "notice", "stdout"]);
  });

  test("binary output arrives as base64 and is decoded", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("process.output", { stream: "stdout", data_base64: btoa("héllo"), offset: 0, bytes: 6 }));
    const out = t.items()[0];
    expect(out?.kind === "output" && out.chunks[0]?.text.length).toBeGreaterThan(0);
  });

  test("a tool call and its result become one item; a stray result stands alone", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("agent.thought", { text: "let me look" }));
    t.add(ev("tool.call", { call_id: "c1", tool: "bash", input: { command: "ls" } }));
    t.add(ev("message", { role: "agent", text: "working" }));
    t.add(ev("tool.result", { call_id: "c1", output: "a.txt\n", exit_code: 0, is_error: false }));
    t.add(ev("tool.result", { call_id: "nope", output: "?", is_error: true }));
    expect(kinds(t.items())).toEqual(["thought", "tool", "message", "tool"]);
    const call = t.items()[1];
    expect(call?.kind === "tool" && call.result?.output).toBe("a.txt\n");
    const stray = t.items()[3];
    expect(stray?.kind === "tool" && stray.call).toBeNull();
  });

  test("unknown types and malformed data are kept, shown generically", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("raw", { type: "assistant", message: {} }));
    t.add(ev("browser.screenshot", { url: "x" }));
    t.add(ev("message", "not an object"));
    t.add(ev("job.state", null));
    expect(kinds(t.items())).toEqual(["other", "other", "other", "other"]);
    expect(t.finalState).toBeNull();
  });

  test("error events read their message", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("error", { message: "12 bytes of output were lost" }));
    const it = t.items()[0];
    expect(it?.kind === "error" && it.text).toBe("12 bytes of output were lost");
  });

  test("items() is a new array after each change (React sees it)", () => {
    seq = 0;
    const t = new Timeline();
    const before = t.items();
    t.add(ev("message", { role: "user", text: "hi" }));
    expect(t.items()).not.toBe(before);
  });
});

describe("parseEvent", () => {
  test.each([
    ['{"seq":3,"job_id":"j","time":"t","type":"message","data":{"text":"x"}}', 3],
    ['{"seq":"3","type":"x"}', null],
    ["not json", null],
    ['{"type":"x"}', null],
  ])("%s", (data, want) => {
    expect(parseEvent(data)?.seq ?? null).toBe(want);
  });
});

describe("a long log", () => {
  test("20 000 output events fold into one block, every byte kept", () => {
    const t = new Timeline();
    let off = 0;
    for (let i = 1; i <= 20_000; i++) {
      const data = `line ${i}\n`;
      t.add({ seq: i, job_id: "j", time: "", type: "process.output", data: { stream: "stdout", data, offset: off, bytes: data.length } });
      off += data.length;
      if (i % 1000 === 0) t.items(); // a render now and then
    }
    const items = t.items();
    expect(items.length).toBe(1);
    const out = items[0];
    expect(out?.kind === "output" && out.bytes).toBe(off);
    expect(out?.kind === "output" && out.lost).toBe(0);
    expect(out?.kind === "output" && out.chunks[0]?.text.split("\n").length).toBe(20_001);
  });
});

describe("the built-in agent's own events", () => {
  test("a model call folds its request and response; condensation is its own item", () => {
    seq = 0;
    const t = new Timeline();
    t.add(ev("llm.request", { step: 1, model: "anthropic/x", messages: 3, est_tokens: 900 }));
    t.add(ev("tool.call", { call_id: "c", tool: "bash", input: { command: "ls" } }));
    t.add(ev("llm.response", { step: 1, model: "anthropic/x", content: [], stop_reason: "tool_use", usage: { input_tokens: 950, output_tokens: 40 }, duration_ms: 1200 }));
    t.add(ev("context.condensed", { summary: "did things", head: 2, from: 9, dropped: 7, tokens_before: 9000, tokens_after: 2000 }));
    expect(kinds(t.items())).toEqual(["llm", "tool", "condensed"]);
    const call = t.items()[0];
    expect(call?.kind === "llm" && call.response?.outputTokens).toBe(40);
  });
});
