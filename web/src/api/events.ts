// The data of each job event type (DESIGN.md §3, api/cpapi). Event data
// is untrusted JSON, and agents may add types later, so each reader checks
// the shape and returns null when it does not fit; the timeline then
// shows the event generically instead of failing.

export interface StateData {
  from: string;
  to: string;
  reason?: string;
}

export interface MessageData {
  role: string;
  text: string;
}

export interface ToolCallData {
  call_id: string;
  tool: string;
  input: unknown;
}

export interface ToolResultData {
  call_id: string;
  output: string;
  exit_code: number | null;
  is_error: boolean;
}

export interface OutputData {
  stream: string;
  /** The chunk as text (decoded from data_base64 when it was not UTF-8). */
  text: string;
  offset: number;
  bytes: number;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | null {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : null;
}

function str(o: Obj, k: string): string | undefined {
  const v = o[k];
  return typeof v === "string" ? v : undefined;
}

function num(o: Obj, k: string): number | undefined {
  const v = o[k];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function stateData(v: unknown): StateData | null {
  const o = obj(v);
  const to = o ? str(o, "to") : undefined;
  if (!o || to === undefined) return null;
  const reason = str(o, "reason");
  return { from: str(o, "from") ?? "", to, ...(reason ? { reason } : {}) };
}

export function messageData(v: unknown): MessageData | null {
  const o = obj(v);
  const text = o ? str(o, "text") : undefined;
  if (!o || text === undefined) return null;
  return { role: str(o, "role") ?? "agent", text };
}

/** thoughtText reads agent.thought, whose data is {text} (or a bare string). */
export function thoughtText(v: unknown): string | null {
  if (typeof v === "string") return v;
  const o = obj(v);
  return (o && (str(o, "text") ?? str(o, "thought"))) ?? null;
}

export function toolCallData(v: unknown): ToolCallData | null {
  const o = obj(v);
  const tool = o ? str(o, "tool") : undefined;
  if (!o || tool === undefined) return null;
  return { call_id: str(o, "call_id") ?? "", tool, input: o["input"] };
}

export function toolResultData(v: unknown): ToolResultData | null {
  const o = obj(v);
  if (!o) return null;
  const out = o["output"];
  const output = typeof out === "string" ? out : out === undefined ? "" : JSON.stringify(out, null, 2);
  return {
    call_id: str(o, "call_id") ?? "",
    output,
    exit_code: num(o, "exit_code") ?? null,
    is_error: o["is_error"] === true,
  };
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

function fromBase64(b64: string): Uint8Array {
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return new Uint8Array();
  }
}

export function outputData(v: unknown): OutputData | null {
  const o = obj(v);
  if (!o) return null;
  const data = str(o, "data");
  const b64 = str(o, "data_base64");
  if (data === undefined && b64 === undefined) return null;
  const text = data ?? utf8.decode(fromBase64(b64 ?? ""));
  return {
    stream: str(o, "stream") ?? "stdout",
    text,
    offset: num(o, "offset") ?? -1,
    bytes: num(o, "bytes") ?? text.length,
  };
}

/** errorText reads an error event: {message} or {error} or {detail}. */
export function errorText(v: unknown): string {
  if (typeof v === "string") return v;
  const o = obj(v);
  if (o) {
    const m = str(o, "message") ?? str(o, "error") ?? str(o, "detail") ?? str(o, "text");
    if (m !== undefined) return m;
  }
  return JSON.stringify(v);
}

/** artifactInfo reads an artifact event: a name and, when given, a size. */
export function artifactInfo(v: unknown): { name: string; size?: number } {
  const o = obj(v);
  if (!o) return { name: typeof v === "string" ? v : "artifact" };
  const name = str(o, "name") ?? str(o, "path") ?? "artifact";
  const size = num(o, "size") ?? num(o, "bytes");
  return size !== undefined ? { name, size } : { name };
}

/** LLMCall is an llm.request and (once it came) its llm.response. */
export interface LLMData {
  step: number;
  model: string;
  purpose: string;
  messages?: number;
  estTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  durationMS?: number;
  stopReason?: string;
}

export function llmData(v: unknown): LLMData | null {
  const o = obj(v);
  if (!o) return null;
  const step = num(o, "step");
  if (step === undefined) return null;
  const out: LLMData = { step, model: str(o, "model") ?? "", purpose: str(o, "purpose") ?? "" };
  const messages = num(o, "messages");
  const est = num(o, "est_tokens");
  const dur = num(o, "duration_ms");
  const stop = str(o, "stop_reason");
  const usage = obj(o["usage"]);
  if (messages !== undefined) out.messages = messages;
  if (est !== undefined) out.estTokens = est;
  if (dur !== undefined) out.durationMS = dur;
  if (stop !== undefined) out.stopReason = stop;
  if (usage) {
    const i = num(usage, "input_tokens");
    const t = num(usage, "output_tokens");
    if (i !== undefined) out.inputTokens = i;
    if (t !== undefined) out.outputTokens = t;
  }
  return out;
}

export interface CondensedData {
  summary: string;
  dropped: number;
  tokensBefore: number;
  tokensAfter: number;
}

export function condensedData(v: unknown): CondensedData | null {
  const o = obj(v);
  const summary = o ? str(o, "summary") : undefined;
  if (!o || summary === undefined) return null;
  return { summary, dropped: num(o, "dropped") ?? 0, tokensBefore: num(o, "tokens_before") ?? 0, tokensAfter: num(o, "tokens_after") ?? 0 };
}
