// The timeline of a job: its events (DESIGN.md §3) folded into items for
// people. Consecutive output chunks become one block (with a notice where
// bytes are missing); a tool call and its result become one item; unknown
// event types are kept and shown generically. Events may arrive twice
// (a stream that resumed): everything at or below the last seq is ignored.

import {
  artifactInfo,
  condensedData,
  llmData,
  errorText,
  messageData,
  outputData,
  stateData,
  thoughtText,
  toolCallData,
  toolResultData,
  type CondensedData,
  type LLMData,
  type MessageData,
  type StateData,
  type ToolCallData,
  type ToolResultData,
} from "../api/events";
import type { JobEvent } from "../api/types";

export interface OutputChunk {
  stream: string;
  text: string;
}

export type Item =
  | { kind: "state"; key: string; time: string; data: StateData }
  | { kind: "message"; key: string; time: string; data: MessageData }
  | { kind: "thought"; key: string; time: string; text: string }
  | { kind: "tool"; key: string; time: string; call: ToolCallData | null; result: ToolResultData | null; resultTime: string | null }
  | { kind: "output"; key: string; time: string; chunks: OutputChunk[]; bytes: number; lost: number; nextOffset: number }
  | { kind: "artifact"; key: string; time: string; name: string; size?: number }
  | { kind: "llm"; key: string; time: string; request: LLMData | null; response: LLMData | null }
  | { kind: "condensed"; key: string; time: string; data: CondensedData }
  | { kind: "error"; key: string; time: string; text: string }
  | { kind: "other"; key: string; time: string; type: string; data: unknown };

/**
 * Timeline accumulates events. items() is a new array after a change (an
 * item that changed is a new object too, so React can skip the others);
 * it is made on demand, so taking thousands of events between two renders
 * costs one copy, not thousands.
 */
export class Timeline {
  private list: Item[] = [];
  private snapshot: Item[] | null = [];
  private toolIndex = new Map<string, number>();
  private llmIndex = new Map<string, number>();
  private _lastSeq = 0;
  private _finalState: StateData | null = null;
  private _lastState: StateData | null = null;
  private _count = 0;

  /** lastSeq is the seq of the last event taken: where a stream resumes. */
  get lastSeq(): number {
    return this._lastSeq;
  }

  /** finalState is the job.state event that ended the job, if seen. */
  get finalState(): StateData | null {
    return this._finalState;
  }

  /** lastState is the latest job.state seen: the job's live status. */
  get lastState(): StateData | null {
    return this._lastState;
  }

  /** count is the number of events taken. */
  get count(): number {
    return this._count;
  }

  items(): Item[] {
    if (!this.snapshot) this.snapshot = this.list.slice();
    return this.snapshot;
  }

  /** add takes one event; it returns false for a duplicate. */
  add(e: JobEvent): boolean {
    if (e.seq <= this._lastSeq) return false;
    this._lastSeq = e.seq;
    this._count++;
    this.snapshot = null;
    const key = String(e.seq);
    switch (e.type) {
      case "job.state": {
        const d = stateData(e.data);
        if (!d) break;
        this._lastState = d;
        if (d.to === "completed" || d.to === "failed" || d.to === "cancelled") this._finalState = d;
        this.list.push({ kind: "state", key, time: e.time, data: d });
        return true;
      }
      case "message": {
        const d = messageData(e.data);
        if (!d) break;
        this.list.push({ kind: "message", key, time: e.time, data: d });
        return true;
      }
      case "agent.thought": {
        const t = thoughtText(e.data);
        if (t === null) break;
        this.list.push({ kind: "thought", key, time: e.time, text: t });
        return true;
      }
      case "tool.call": {
        const d = toolCallData(e.data);
        if (!d) break;
        if (d.call_id) this.toolIndex.set(d.call_id, this.list.length);
        this.list.push({ kind: "tool", key, time: e.time, call: d, result: null, resultTime: null });
        return true;
      }
      case "tool.result": {
        const d = toolResultData(e.data);
        if (!d) break;
        const i = d.call_id ? this.toolIndex.get(d.call_id) : undefined;
        const it = i === undefined ? undefined : this.list[i];
        if (i !== undefined && it && it.kind === "tool" && !it.result) {
          this.list[i] = { ...it, result: d, resultTime: e.time };
        } else {
          this.list.push({ kind: "tool", key, time: e.time, call: null, result: d, resultTime: e.time });
        }
        return true;
      }
      case "process.output": {
        const d = outputData(e.data);
        if (!d) break;
        const last = this.list[this.list.length - 1];
        if (last && last.kind === "output") {
          const lost = d.offset >= 0 && last.nextOffset >= 0 && d.offset > last.nextOffset ? d.offset - last.nextOffset : 0;
          const chunks = last.chunks.slice();
          const tail = chunks[chunks.length - 1];
          if (lost > 0) chunks.push({ stream: "notice", text: `[${lost} bytes of output missing here]\n` });
          if (tail && tail.stream === d.stream && lost === 0) chunks[chunks.length - 1] = { stream: d.stream, text: tail.text + d.text };
          else chunks.push({ stream: d.stream, text: d.text });
          this.list[this.list.length - 1] = {
            ...last,
            chunks,
            bytes: last.bytes + d.bytes,
            lost: last.lost + lost,
            nextOffset: d.offset >= 0 ? d.offset + d.bytes : -1,
          };
        } else {
          this.list.push({
            kind: "output",
            key,
            time: e.time,
            chunks: [{ stream: d.stream, text: d.text }],
            bytes: d.bytes,
            lost: 0,
            nextOffset: d.offset >= 0 ? d.offset + d.bytes : -1,
          });
        }
        return true;
      }
      case "llm.request":
      case "llm.response": {
        const d = llmData(e.data);
        if (!d) break;
        const id = `${d.purpose}:${d.step}`;
        if (e.type === "llm.request") {
          this.llmIndex.set(id, this.list.length);
          this.list.push({ kind: "llm", key, time: e.time, request: d, response: null });
          return true;
        }
        const i = this.llmIndex.get(id);
        const it = i === undefined ? undefined : this.list[i];
        if (i !== undefined && it && it.kind === "llm" && !it.response) this.list[i] = { ...it, response: d };
        else this.list.push({ kind: "llm", key, time: e.time, request: null, response: d });
        return true;
      }
      case "context.condensed": {
        const d = condensedData(e.data);
        if (!d) break;
        this.list.push({ kind: "condensed", key, time: e.time, data: d });
        return true;
      }
      case "artifact": {
        const a = artifactInfo(e.data);
        this.list.push({ kind: "artifact", key, time: e.time, ...a });
        return true;
      }
      case "error":
        this.list.push({ kind: "error", key, time: e.time, text: errorText(e.data) });
        return true;
    }
    // raw (an external agent's native event), a type added later, or data
    // of an unexpected shape: shown as it is.
    this.list.push({ kind: "other", key, time: e.time, type: e.type, data: e.data });
    return true;
  }
}

/** parseEvent reads the data of one SSE message of the job log. */
export function parseEvent(data: string): JobEvent | null {
  try {
    const v = JSON.parse(data) as Partial<JobEvent>;
    if (typeof v.seq !== "number" || typeof v.type !== "string") return null;
    return { seq: v.seq, job_id: v.job_id ?? "", time: v.time ?? "", type: v.type, data: v.data ?? null };
  } catch {
    return null;
  }
}
