// The browser side of sandboxd's connect protocol (DESIGN.md §2,
// "Connect"; api/sandboxapi/frames.go), over the control plane's proxy.
//
// Server → client: binary frames are one stream byte (1 stdout or the
// PTY, 2 stderr) and the output; text frames are JSON: {"type":"truncated",
// "from":N}, {"type":"exit",...} before a normal close, {"type":"error",
// "detail"} when a client frame was refused. Client → server: binary
// frames are input; text frames are resize, signal and close_stdin.
//
// Like client/stream.go, a connection keeps the offset of the next output
// byte it expects (both streams count) and, when the socket drops,
// redials with ?offset= that number: the daemon replays what was missed,
// so nothing is lost or shown twice while the gap fits its window. The
// first dial asks for offset 0; when the start has left the window the
// daemon answers with a truncated frame naming where output resumes.
// Browsers cannot read the status of a refused WebSocket handshake, so
// after a failed dial probe() (an ordinary HTTP request) tells a dropped
// network from a process that is gone or a token that was revoked.

export type ConnectionState = "connecting" | "open" | "reconnecting" | "exited" | "gone" | "failed" | "closed";

export type ProbeResult = "retry" | "gone" | "unauthorized";

export interface ConnectionOptions {
  /** url is the WebSocket URL that replays from offset. */
  url: (offset: number) => string;
  onOutput: (data: Uint8Array, stream: number) => void;
  /** onTruncated: output before from is gone; initial when it was before anything was shown. */
  onTruncated?: (from: number, initial: boolean) => void;
  onExit?: (exitCode: number | null, signal: string | null) => void;
  /** onRefused: the daemon refused a frame we sent (input to a process without stdin...). */
  onRefused?: (detail: string) => void;
  onState?: (state: ConnectionState, detail?: string) => void;
  probe?: () => Promise<ProbeResult>;
  /** pty: send resizes (only PTY processes have a size). */
  pty?: boolean;
  startOffset?: number;
  WebSocketImpl?: typeof WebSocket;
  /** delays of the redial backoff, for tests */
  backoff?: { min: number; max: number };
}

export const StreamStdout = 1;
export const StreamStderr = 2;

const inputFrame = 16 << 10;
const maxQueued = 256 << 10;

interface ControlFrame {
  type?: unknown;
  from?: unknown;
  exit_code?: unknown;
  signal?: unknown;
  detail?: unknown;
}

export class TerminalConnection {
  private readonly opts: ConnectionOptions;
  private readonly WS: typeof WebSocket;
  private ws: WebSocket | null = null;
  private _offset: number;
  private shown = false; // some output was delivered
  private stopped = false;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private queue: Uint8Array[] = [];
  private queued = 0;
  private size: { rows: number; cols: number } | null = null;
  private _state: ConnectionState = "connecting";
  private readonly encoder = new TextEncoder();

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.WS = opts.WebSocketImpl ?? WebSocket;
    this._offset = opts.startOffset ?? 0;
    this.dial();
  }

  /** offset is the offset of the next output byte expected. */
  get offset(): number {
    return this._offset;
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** send writes input (text is sent as UTF-8). It is queued while redialing. */
  send(data: string | Uint8Array): void {
    if (this.stopped) return;
    const bytes = typeof data === "string" ? this.encoder.encode(data) : data;
    for (let i = 0; i < bytes.length; i += inputFrame) {
      const chunk = bytes.subarray(i, i + inputFrame);
      if (this.ws && this.ws.readyState === this.WS.OPEN) {
        this.ws.send(chunk);
      } else if (this.queued + chunk.length <= maxQueued) {
        this.queue.push(chunk.slice());
        this.queued += chunk.length;
      }
    }
  }

  /** resize sets the terminal size; it is sent again after a redial. */
  resize(rows: number, cols: number): void {
    if (!this.opts.pty || rows < 1 || cols < 1 || rows > 10000 || cols > 10000) return;
    if (this.size && this.size.rows === rows && this.size.cols === cols) return;
    this.size = { rows, cols };
    this.control({ type: "resize", rows, cols });
  }

  /** signal sends a signal (name or number) to the process. */
  signal(sig: string): void {
    this.control({ type: "signal", signal: sig });
  }

  /** close ends the connection; the process is not touched. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.setState("closed");
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000, "closed by the user");
  }

  private control(frame: Record<string, unknown>): void {
    if (this.ws && this.ws.readyState === this.WS.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private setState(s: ConnectionState, detail?: string): void {
    if (s === this._state && detail === undefined && s !== "connecting") return;
    this._state = s;
    this.opts.onState?.(s, detail);
  }

  private dial(): void {
    if (this.stopped) return;
    this.setState(this.attempts === 0 && !this.shown ? "connecting" : "reconnecting");
    let ws: WebSocket;
    try {
      ws = new this.WS(this.opts.url(this._offset));
    } catch (err) {
      this.stop("failed", `cannot open a WebSocket: ${String(err)}`);
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    let exited = false;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.attempts = 0;
      this.setState("open");
      if (this.size) ws.send(JSON.stringify({ type: "resize", ...this.size }));
      const q = this.queue;
      this.queue = [];
      this.queued = 0;
      for (const chunk of q) ws.send(chunk);
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (this.ws !== ws) return;
      if (typeof ev.data !== "string") {
        const bytes = new Uint8Array(ev.data as ArrayBuffer);
        if (bytes.length < 2) return;
        const payload = bytes.subarray(1);
        this._offset += payload.length;
        this.shown = true;
        this.opts.onOutput(payload, bytes[0] ?? StreamStdout);
        return;
      }
      let f: ControlFrame;
      try {
        f = JSON.parse(ev.data) as ControlFrame;
      } catch {
        return; // not ours to judge: the protocol may grow
      }
      switch (f.type) {
        case "truncated":
          if (typeof f.from === "number") {
            this._offset = f.from;
            this.opts.onTruncated?.(f.from, !this.shown);
          }
          break;
        case "exit":
          exited = true;
          this.opts.onExit?.(typeof f.exit_code === "number" ? f.exit_code : null, typeof f.signal === "string" ? f.signal : null);
          break;
        case "error":
          this.opts.onRefused?.(typeof f.detail === "string" ? f.detail : "refused");
          break;
      }
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (exited) {
        this.stop("exited");
        return;
      }
      if (this.stopped) return;
      void this.redial();
    };
    ws.onerror = () => {
      // onclose follows and decides
    };
  }

  private async redial(): Promise<void> {
    this.attempts++;
    this.setState("reconnecting");
    if (this.opts.probe) {
      let verdict: ProbeResult = "retry";
      try {
        verdict = await this.opts.probe();
      } catch {
        verdict = "retry";
      }
      if (this.stopped) return;
      if (verdict === "gone") {
        this.stop("gone", "the process no longer exists");
        return;
      }
      if (verdict === "unauthorized") {
        this.stop("failed", "the token was not accepted");
        return;
      }
    }
    const { min, max } = this.opts.backoff ?? { min: 200, max: 5000 };
    const delay = this.attempts === 1 ? 0 : Math.min(max, min * 2 ** Math.min(this.attempts - 2, 6));
    this.timer = setTimeout(() => this.dial(), delay);
  }

  private stop(state: ConnectionState, detail?: string): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.setState(state, detail);
  }
}
