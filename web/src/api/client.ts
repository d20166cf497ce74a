// The typed client of the control plane API (DESIGN.md §3) and of the
// sandbox daemon routes it proxies under /v1/sandboxes/{id}/ (§2). Every
// call sends the bearer token, has a timeout, and fails with an ApiError
// that describeError turns into a sentence. A 401 also calls
// onUnauthorized, which logs the user out.

import { ApiError, errorFromResponse, networkError } from "./errors";
import { openStream, type StreamOptions } from "./sse";
import type {
  DesktopStatus,
  FileInfo,
  FileList,
  Job,
  JobList,
  JobRequest,
  Process,
  ProcessList,
  Sandbox,
  SandboxList,
  SandboxRequest,
  SpawnRequest,
} from "./types";

type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** raw is sent as it is (a file upload) instead of JSON. */
  raw?: BodyInit;
  accept?: string;
  signal?: AbortSignal;
  /** timeoutMs bounds the wait for the response headers; 30 s by default. */
  timeoutMs?: number;
}

/** Progress of a long transfer; total is null when unknown. */
export type Progress = (loaded: number, total: number | null) => void;

const defaultTimeout = 30_000;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

const seg = encodeURIComponent;

export class Client {
  readonly token: string;
  private readonly base: string;
  private readonly onUnauthorized: () => void;

  constructor(token: string, opts: { base?: string; onUnauthorized?: () => void } = {}) {
    this.token = token;
    this.base = opts.base ?? "";
    this.onUnauthorized = opts.onUnauthorized ?? (() => {});
  }

  /** url is the absolute URL of an API path. */
  url(path: string): string {
    return this.base + path;
  }

  /**
   * wsURL is the WebSocket URL of an API path. Browsers cannot give a
   * WebSocket a header, so the token travels as ?access_token=, which
   * the control plane removes before anything logs or forwards it.
   */
  wsURL(path: string, query: Query = {}): string {
    const u = new URL(withQuery(this.url(path), { ...query, access_token: this.token }), window.location.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    return u.toString();
  }

  /** fetch sends one request and returns the response when it is 2xx. */
  async fetch(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    let body: BodyInit | undefined;
    if (opts.raw !== undefined) {
      body = opts.raw;
      headers["Content-Type"] = "application/octet-stream";
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["Content-Type"] = "application/json";
    }
    headers["Accept"] = opts.accept ?? "application/json";
    const timeoutMs = opts.timeoutMs ?? defaultTimeout;
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (opts.signal) signals.push(opts.signal);
    let resp: Response;
    try {
      resp = await fetch(this.url(withQuery(path, opts.query)), {
        method,
        headers,
        body: body ?? null,
        signal: AbortSignal.any(signals),
        cache: "no-store",
      });
    } catch (err) {
      throw networkError(err, timeoutMs);
    }
    if (!resp.ok) {
      const err = await errorFromResponse(resp);
      if (err.status === 401) this.onUnauthorized();
      throw err;
    }
    return resp;
  }

  /** json sends a request and decodes its JSON answer. */
  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const resp = await this.fetch(method, path, opts);
    let text: string;
    try {
      text = await resp.text();
    } catch (err) {
      throw networkError(err);
    }
    if (text.trim() === "") return undefined as T; // 202 and 204 carry no body
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ApiError("network", resp.status, `the answer was not valid JSON (${String(err)})`);
    }
  }

  /**
   * download reads a response body in full, reporting progress, and
   * returns it with the file name the server suggested.
   */
  async download(path: string, opts: RequestOptions & { onProgress?: Progress } = {}): Promise<{ blob: Blob; filename: string | null }> {
    const resp = await this.fetch("GET", path, { accept: "*/*", timeoutMs: 60_000, ...opts });
    const total = Number(resp.headers.get("Content-Length")) || null;
    const filename = filenameOf(resp.headers.get("Content-Disposition"));
    const type = resp.headers.get("Content-Type") ?? "application/octet-stream";
    if (!resp.body) return { blob: await resp.blob(), filename };
    const reader = resp.body.getReader();
    const parts: Uint8Array[] = [];
    let loaded = 0;
    opts.onProgress?.(0, total);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parts.push(value);
        loaded += value.byteLength;
        opts.onProgress?.(loaded, total);
      }
    } catch (err) {
      throw networkError(err);
    }
    return { blob: new Blob(parts as BlobPart[], { type }), filename };
  }

  /**
   * upload PUTs a body with progress. fetch cannot report upload
   * progress, so this one request uses XMLHttpRequest.
   */
  upload<T>(path: string, body: Blob, opts: { query?: Query; onProgress?: Progress; signal?: AbortSignal } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("PUT", this.url(withQuery(path, opts.query)));
      xhr.setRequestHeader("Authorization", `Bearer ${this.token}`);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = (e) => opts.onProgress?.(e.loaded, e.lengthComputable ? e.total : null);
      xhr.onerror = () => reject(new ApiError("network", 0, "the upload was interrupted"));
      xhr.onabort = () => reject(new ApiError("aborted", 0, "cancelled"));
      xhr.onload = () => {
        const resp = new Response(xhr.status === 204 ? null : xhr.responseText, {
          status: xhr.status,
          headers: { "Content-Type": xhr.getResponseHeader("Content-Type") ?? "" },
        });
        if (xhr.status >= 200 && xhr.status < 300) {
          resolve((xhr.responseText ? JSON.parse(xhr.responseText) : undefined) as T);
          return;
        }
        void errorFromResponse(resp).then((err) => {
          if (err.status === 401) this.onUnauthorized();
          reject(err);
        });
      };
      opts.signal?.addEventListener("abort", () => xhr.abort());
      xhr.send(body);
    });
  }

  /** stream follows an SSE route with this client's token (see sse.ts). */
  stream(path: string | (() => string), opts: Omit<StreamOptions, "url" | "token" | "onUnauthorized">): () => void {
    const url = typeof path === "string" ? () => this.url(path) : () => this.url(path());
    return openStream({ ...opts, url, token: this.token, onUnauthorized: this.onUnauthorized });
  }

  // ---- jobs

  listJobs(q: { status?: string; cursor?: string; limit?: number } = {}, signal?: AbortSignal): Promise<JobList> {
    return this.json("GET", "/v1/jobs", { query: q, ...(signal ? { signal } : {}) });
  }
  getJob(id: string, signal?: AbortSignal): Promise<Job> {
    return this.json("GET", `/v1/jobs/${seg(id)}`, signal ? { signal } : {});
  }
  createJob(req: JobRequest): Promise<Job> {
    return this.json("POST", "/v1/jobs", { body: req });
  }
  cancelJob(id: string): Promise<Job> {
    return this.json("POST", `/v1/jobs/${seg(id)}/cancel`);
  }
  sendMessage(id: string, text: string): Promise<void> {
    return this.json("POST", `/v1/jobs/${seg(id)}/messages`, { body: { text } });
  }
  async jobDiff(id: string, signal?: AbortSignal): Promise<string> {
    const resp = await this.fetch("GET", `/v1/jobs/${seg(id)}/diff`, { accept: "text/x-diff", ...(signal ? { signal } : {}) });
    return resp.text();
  }
  jobEventsPath(id: string, after: number): string {
    return withQuery(`/v1/jobs/${seg(id)}/events`, { after });
  }

  // ---- sandboxes

  listSandboxes(signal?: AbortSignal): Promise<SandboxList> {
    return this.json("GET", "/v1/sandboxes", signal ? { signal } : {});
  }
  getSandbox(id: string, signal?: AbortSignal): Promise<Sandbox> {
    return this.json("GET", `/v1/sandboxes/${seg(id)}`, signal ? { signal } : {});
  }
  createSandbox(req: SandboxRequest, signal?: AbortSignal): Promise<Sandbox> {
    // Creating may build a warm pool entry or pull an image: allow time.
    return this.json("POST", "/v1/sandboxes", { body: req, timeoutMs: 180_000, ...(signal ? { signal } : {}) });
  }
  deleteSandbox(id: string): Promise<void> {
    return this.json("DELETE", `/v1/sandboxes/${seg(id)}`, { timeoutMs: 60_000 });
  }

  // ---- a sandbox's daemon, through the proxy

  sandboxPath(id: string, route: string): string {
    return `/v1/sandboxes/${seg(id)}/${route}`;
  }
  listProcesses(sandbox: string, signal?: AbortSignal): Promise<ProcessList> {
    return this.json("GET", this.sandboxPath(sandbox, "processes"), signal ? { signal } : {});
  }
  getProcess(sandbox: string, ref: string): Promise<Process> {
    return this.json("GET", this.sandboxPath(sandbox, `processes/${seg(ref)}`));
  }
  spawn(sandbox: string, req: SpawnRequest): Promise<Process> {
    return this.json("POST", this.sandboxPath(sandbox, "processes"), { body: req });
  }
  deleteProcess(sandbox: string, ref: string): Promise<void> {
    return this.json("DELETE", this.sandboxPath(sandbox, `processes/${seg(ref)}`));
  }
  connectURL(sandbox: string, ref: string, offset: number): string {
    return this.wsURL(this.sandboxPath(sandbox, `processes/${seg(ref)}/connect`), { offset });
  }
  listFiles(sandbox: string, path: string, signal?: AbortSignal): Promise<FileList> {
    return this.json("GET", this.sandboxPath(sandbox, "fs/list"), { query: { path, depth: 1 }, ...(signal ? { signal } : {}) });
  }
  stat(sandbox: string, path: string): Promise<FileInfo> {
    return this.json("GET", this.sandboxPath(sandbox, "fs/stat"), { query: { path } });
  }
  async readFile(sandbox: string, path: string, maxBytes: number, signal?: AbortSignal): Promise<{ data: Uint8Array; partial: boolean }> {
    const resp = await this.fetch("GET", this.sandboxPath(sandbox, "fs/file"), {
      query: { path },
      accept: "*/*",
      ...(signal ? { signal } : {}),
    });
    const buf = new Uint8Array(await resp.arrayBuffer());
    return buf.byteLength > maxBytes ? { data: buf.slice(0, maxBytes), partial: true } : { data: buf, partial: false };
  }
  writeFile(sandbox: string, path: string, body: Blob, onProgress?: Progress, signal?: AbortSignal): Promise<FileInfo> {
    return this.upload(this.sandboxPath(sandbox, "fs/file"), body, {
      query: { path },
      ...(onProgress ? { onProgress } : {}),
      ...(signal ? { signal } : {}),
    });
  }
  mkdir(sandbox: string, path: string): Promise<FileInfo> {
    return this.json("POST", this.sandboxPath(sandbox, "fs/mkdir"), { body: { path, parents: true } });
  }
  deletePath(sandbox: string, path: string): Promise<void> {
    return this.json("DELETE", this.sandboxPath(sandbox, "fs/file"), { query: { path, recursive: true } });
  }
  /**
   * desktopStatus is the sandbox's desktop (GET .../desktop/status), or
   * null when it has none: any answer but 200 means no Desktop tab.
   */
  async desktopStatus(sandbox: string, signal?: AbortSignal): Promise<DesktopStatus | null> {
    try {
      const resp = await this.fetch("GET", this.sandboxPath(sandbox, "desktop/status"), { timeoutMs: 10_000, ...(signal ? { signal } : {}) });
      const v = (await resp.json()) as Partial<DesktopStatus>;
      return { running: v.running === true, vnc: v.vnc === true, ...(v.width ? { width: v.width } : {}), ...(v.height ? { height: v.height } : {}) };
    } catch {
      return null;
    }
  }
  /** startDesktop starts the sandbox's desktop (Xvfb, window manager, VNC). */
  startDesktop(sandbox: string): Promise<DesktopStatus> {
    return this.json("POST", this.sandboxPath(sandbox, "desktop/start"), { body: {}, timeoutMs: 60_000 });
  }
}

/** filenameOf reads the file name of a Content-Disposition header. */
export function filenameOf(cd: string | null): string | null {
  if (!cd) return null;
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(cd);
  if (star?.[1]) {
    try {
      return decodeURIComponent(star[1]);
    } catch {
      // fall through to the plain form
    }
  }
  const plain = /filename\s*=\s*"([^"]*)"|filename\s*=\s*([^;]+)/i.exec(cd);
  const name = plain?.[1] ?? plain?.[2]?.trim();
  return name ? name.replace(/[/\\]/g, "_") : null;
}
