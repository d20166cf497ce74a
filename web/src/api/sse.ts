// Server-Sent Events over fetch.
//
// The browser's EventSource is not used: it cannot send the Authorization
// header (the token would have to travel in the URL), it hides the HTTP
// status of a refused stream (a 401 or 404 becomes an endless silent retry
// loop), and it reconnects even after the server ended the stream on
// purpose (the job log ends after the job's final state). Reading the
// stream with fetch gives us the header, the problem+json of a refusal,
// our own resume point (?after=) and our own idea of when to stop.

import { ApiError, errorFromResponse, isAbort, networkError } from "./errors";

/** SSEMessage is one event of a stream. */
export interface SSEMessage {
  id: string | null;
  event: string;
  data: string;
}

/**
 * SSEParser turns the text of a stream, fed in arbitrary chunks, into
 * messages (the WHATWG event-stream rules: CR, LF or CRLF line ends,
 * comments, multi-line data, the optional space after the colon).
 */
export class SSEParser {
  private buf = "";
  private data: string[] = [];
  private event = "";
  private id: string | null = null;
  private sawField = false;

  /** feed parses chunk and returns the messages it completed. */
  feed(chunk: string): SSEMessage[] {
    this.buf += chunk;
    const out: SSEMessage[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // A lone CR at the very end may be the first half of a CRLF.
      if (m[0] === "\r" && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const msg = this.line(line);
      if (msg) out.push(msg);
    }
    return out;
  }

  private line(line: string): SSEMessage | null {
    if (line === "") {
      if (!this.sawField) return null;
      const msg: SSEMessage = { id: this.id, event: this.event || "message", data: this.data.join("\n") };
      this.data = [];
      this.event = "";
      this.id = null;
      this.sawField = false;
      return msg;
    }
    if (line.startsWith(":")) return null; // a comment: heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.sawField = true;
        break;
      case "event":
        this.event = value;
        this.sawField = true;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        this.sawField = true;
        break;
      default: // retry and unknown fields are ignored
    }
    return null;
  }
}

export type StreamState =
  | { kind: "connecting" }
  | { kind: "open" }
  | { kind: "reconnecting"; attempt: number; error: ApiError }
  | { kind: "ended" }
  | { kind: "failed"; error: ApiError };

export interface StreamOptions {
  /** url returns the URL of the next attempt (it may carry a resume point). */
  url: () => string;
  token: string;
  /** onOpen runs when an attempt got its 200 (first and later attempts). */
  onOpen?: () => void;
  onMessage: (msg: SSEMessage) => void;
  onState?: (state: StreamState) => void;
  /**
   * done reports, when the server ended a stream cleanly, whether that is
   * the end (no reconnection). Streams that never end (the tenant's
   * events) leave it out.
   */
  done?: () => boolean;
  /** onUnauthorized runs on a 401, after which the stream stops. */
  onUnauthorized?: () => void;
  /**
   * idleMs: an attempt that receives nothing (not even the server's
   * 15 s heartbeat comment) for this long is deemed dead and redialed.
   */
  idleMs?: number;
  fetchImpl?: typeof fetch;
}

const backoffMin = 250;
const backoffMax = 5000;

/**
 * openStream follows an SSE stream until done() says it is over, the
 * server refuses it for good (4xx), or the returned stop is called. Dropped
 * connections, 5xx and 429 answers are retried with backoff, each attempt
 * asking options.url() for where to resume.
 */
export function openStream(opts: StreamOptions): () => void {
  const ctl = new AbortController();
  void run(opts, ctl.signal);
  return () => ctl.abort();
}

async function run(opts: StreamOptions, signal: AbortSignal): Promise<void> {
  const doFetch = opts.fetchImpl ?? fetch.bind(globalThis);
  const idleMs = opts.idleMs ?? 45_000;
  let attempt = 0;
  const setState = (s: StreamState): void => {
    if (!signal.aborted) opts.onState?.(s);
  };
  setState({ kind: "connecting" });
  while (!signal.aborted) {
    const attemptCtl = new AbortController();
    let reader: ReadableStreamDefaultReader<string> | null = null;
    // Aborting the request is not enough once the body is being read
    // (not every fetch ties its body to the signal): cancel the reader too.
    const abortAttempt = (): void => {
      attemptCtl.abort();
      void reader?.cancel().catch(() => {});
    };
    signal.addEventListener("abort", abortAttempt);
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let idleFired = false;
    const armIdle = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        idleFired = true;
        abortAttempt();
      }, idleMs);
    };
    let failure: ApiError | null = null;
    try {
      armIdle();
      const resp = await doFetch(opts.url(), {
        headers: { Authorization: `Bearer ${opts.token}`, Accept: "text/event-stream" },
        signal: attemptCtl.signal,
        cache: "no-store",
      });
      if (!resp.ok) {
        const err = await errorFromResponse(resp);
        if (err.status === 401) {
          setState({ kind: "failed", error: err });
          opts.onUnauthorized?.();
          return;
        }
        if (!err.retryable) {
          setState({ kind: "failed", error: err });
          return;
        }
        failure = err;
      } else if (!resp.body) {
        failure = new ApiError("network", 0, "the stream has no body");
      } else {
        attempt = 0;
        setState({ kind: "open" });
        opts.onOpen?.();
        reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        if (attemptCtl.signal.aborted) void reader.cancel().catch(() => {});
        const parser = new SSEParser();
        for (;;) {
          armIdle();
          const { value, done } = await reader.read();
          if (done) break;
          for (const msg of parser.feed(value)) {
            if (signal.aborted) return;
            opts.onMessage(msg);
          }
        }
        if (signal.aborted) return;
        if (idleFired) {
          failure = new ApiError("timeout", 0, `nothing received for ${Math.round(idleMs / 1000)} s`);
        } else if (opts.done?.()) {
          setState({ kind: "ended" });
          return;
        } else {
          failure = new ApiError("network", 0, "the server closed the stream");
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      failure = idleFired
        ? new ApiError("timeout", 0, `nothing received for ${Math.round(idleMs / 1000)} s`)
        : isAbort(err)
          ? new ApiError("network", 0, "the connection was reset")
          : networkError(err);
    } finally {
      clearTimeout(idleTimer);
      signal.removeEventListener("abort", abortAttempt);
      attemptCtl.abort();
    }
    if (signal.aborted) return;
    attempt++;
    const err = failure ?? new ApiError("network", 0, "the stream stopped");
    setState({ kind: "reconnecting", attempt, error: err });
    const wait =
      err.retryAfter !== null ? err.retryAfter * 1000 : Math.min(backoffMax, backoffMin * 2 ** Math.min(attempt - 1, 5));
    await sleep(wait, signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
