// People-readable errors. Every failure the UI shows goes through
// describeError, so an API problem (RFC 9457 problem+json), a dropped
// network and a timeout all read as a sentence with what to do next.

/** Problem is the control plane's (and sandboxd's) error body. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
}

export type ErrorKind = "http" | "network" | "timeout" | "aborted";

/** ApiError is a failed call: an HTTP error status, or no answer at all. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  /** HTTP status; 0 when there was no response. */
  readonly status: number;
  readonly problem: Problem | null;
  /** Seconds to wait before retrying (Retry-After), when the server said. */
  readonly retryAfter: number | null;

  constructor(kind: ErrorKind, status: number, message: string, problem: Problem | null = null, retryAfter: number | null = null) {
    super(message);
    this.name = "ApiError";
    this.kind = kind;
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }

  /** Whether trying the same request again later may work. */
  get retryable(): boolean {
    if (this.kind === "network" || this.kind === "timeout") return true;
    return this.status === 429 || this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** errorFromResponse reads a failed response's problem+json (or text). */
export async function errorFromResponse(resp: Response): Promise<ApiError> {
  let problem: Problem | null = null;
  let text = "";
  try {
    text = await resp.text();
  } catch {
    // the body broke off: the status alone has to do
  }
  const type = resp.headers.get("Content-Type") ?? "";
  if (text && (type.includes("json") || text.startsWith("{"))) {
    try {
      const v: unknown = JSON.parse(text);
      if (v && typeof v === "object") problem = v as Problem;
    } catch {
      problem = null;
    }
  }
  if (!problem && text && text.length < 500 && !type.includes("html")) {
    problem = { status: resp.status, detail: text.trim() };
  }
  const ra = resp.headers.get("Retry-After");
  const retryAfter = ra && /^\d+$/.test(ra) ? Number(ra) : null;
  const msg = problem?.detail || problem?.title || resp.statusText || `HTTP ${resp.status}`;
  return new ApiError("http", resp.status, msg, problem, retryAfter);
}

/** networkError wraps what fetch threw. */
export function networkError(err: unknown, timeoutMs?: number): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof DOMException && err.name === "TimeoutError") {
    const s = timeoutMs ? Math.round(timeoutMs / 1000) : null;
    return new ApiError("timeout", 0, s ? `no answer within ${s} s` : "no answer in time");
  }
  if (err instanceof DOMException && err.name === "AbortError") {
    return new ApiError("aborted", 0, "cancelled");
  }
  return new ApiError("network", 0, err instanceof Error ? err.message : String(err));
}

/** isAbort reports whether err only says the caller gave up. */
export function isAbort(err: unknown): boolean {
  return (
    (err instanceof ApiError && err.kind === "aborted") ||
    (err instanceof DOMException && err.name === "AbortError")
  );
}

function sentence(s: string): string {
  const t = s.trim();
  if (!t) return t;
  const first = t.charAt(0).toUpperCase() + t.slice(1);
  return /[.!?]$/.test(first) ? first : first + ".";
}

/**
 * describeError turns any error into a sentence for people, prefixed with
 * what was being done ("Cancelling the job failed: ...").
 */
export function describeError(err: unknown, doing?: string): string {
  const prefix = doing ? `${doing} failed: ` : "";
  if (!(err instanceof ApiError)) {
    const m = err instanceof Error ? err.message : String(err);
    return prefix + sentence(m || "something went wrong");
  }
  const detail = err.problem?.detail || err.problem?.title || "";
  switch (err.kind) {
    case "network":
      return prefix + "Cannot reach the Corral server. Check that `corral up` is running and that this computer is online.";
    case "timeout":
      return prefix + `The server did not answer (${err.message}). It may be overloaded; try again.`;
    case "aborted":
      return prefix + "Cancelled.";
    case "http":
      break;
  }
  switch (err.status) {
    case 400:
      return prefix + sentence(detail || "the server did not understand the request");
    case 401:
      return prefix + "Your token was not accepted (it may have been revoked). Please log in again.";
    case 403:
      return prefix + sentence(detail || "you are not allowed to do that");
    case 404:
      return prefix + sentence(detail || "it does not exist (any more)");
    case 408:
      return prefix + "The server gave up waiting for the request. Try again.";
    case 409:
      return prefix + sentence(detail || "that conflicts with the current state; reload and try again");
    case 413:
      return prefix + sentence(detail || "that is too large for the server");
    case 422:
      return prefix + sentence(detail || "the server cannot do that with these values");
    case 429: {
      const wait = err.retryAfter !== null ? ` in ${err.retryAfter} s` : " in a moment";
      return prefix + `Too many requests; try again${wait}.`;
    }
    case 502:
    case 503:
    case 504:
      return prefix + sentence(detail || "the sandbox or the server is not available right now; try again shortly");
    default:
      if (err.status >= 500) {
        return prefix + sentence(`the server failed${detail ? ` (${detail})` : ""}; try again, and check the server's log if it persists`);
      }
      return prefix + sentence(detail || `unexpected answer (HTTP ${err.status})`);
  }
}
