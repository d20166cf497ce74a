// Test doubles that speak the real wire formats: fetch answering with
// problem+json or an SSE body, and a WebSocket the test drives.

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": status >= 400 ? "application/problem+json" : "application/json", ...headers } });
}

export function problem(status: number, detail: string): Response {
  return json(status, { type: "about:blank", title: "x", status, detail });
}

/** sseBody is a stream of SSE text chunks; it ends when close() is called or at once if end. */
export function sseResponse(chunks: string[], opts: { end?: boolean } = {}): { response: Response; push: (s: string) => void; close: () => void; error: (e: unknown) => void } {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      if (opts.end) c.close();
    },
  });
  return {
    response: new Response(stream, { status: 200, headers: { "Content-Type": "text/event-stream" } }),
    push: (s) => ctl.enqueue(enc.encode(s)),
    close: () => ctl.close(),
    error: (e) => ctl.error(e),
  };
}

export function sseEvent(id: number | null, event: string, data: unknown): string {
  return `${id !== null ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

type Listener = ((ev: never) => void) | null;

/** FakeSocket is a WebSocket whose server side the test plays. */
export class FakeSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static all: FakeSocket[] = [];
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readonly CLOSING = 2;
  readonly CLOSED = 3;

  readonly url: string;
  readyState = 0;
  binaryType = "blob";
  sent: (string | Uint8Array)[] = [];
  onopen: Listener = null;
  onmessage: Listener = null;
  onclose: Listener = null;
  onerror: Listener = null;

  constructor(url: string) {
    this.url = url;
    FakeSocket.all.push(this);
  }

  static reset(): void {
    FakeSocket.all = [];
  }

  static last(): FakeSocket {
    const s = FakeSocket.all[FakeSocket.all.length - 1];
    if (!s) throw new Error("no socket");
    return s;
  }

  send(data: string | Uint8Array): void {
    if (this.readyState !== 1) throw new Error("send on a socket that is not open");
    this.sent.push(typeof data === "string" ? data : data.slice());
  }

  close(): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    (this.onclose as ((e: unknown) => void) | null)?.({ code: 1000 });
  }

  // --- the server's side

  open(): void {
    this.readyState = 1;
    (this.onopen as ((e: unknown) => void) | null)?.({});
  }

  output(stream: number, text: string): void {
    const body = new TextEncoder().encode(text);
    const frame = new Uint8Array(body.length + 1);
    frame[0] = stream;
    frame.set(body, 1);
    (this.onmessage as ((e: unknown) => void) | null)?.({ data: frame.buffer });
  }

  control(frame: unknown): void {
    (this.onmessage as ((e: unknown) => void) | null)?.({ data: JSON.stringify(frame) });
  }

  drop(): void {
    this.readyState = 3;
    (this.onclose as ((e: unknown) => void) | null)?.({ code: 1006 });
  }

  /** texts are the control frames the client sent, parsed. */
  texts(): unknown[] {
    return this.sent.filter((s): s is string => typeof s === "string").map((s) => JSON.parse(s) as unknown);
  }

  /** input is the client's binary frames as text. */
  input(): string {
    return this.sent
      .filter((s): s is Uint8Array => typeof s !== "string")
      .map((b) => new TextDecoder().decode(b))
      .join("");
  }
}
