import { describe, expect, test } from "vitest";
import { ApiError, describeError, errorFromResponse, networkError } from "./errors";
import { problem } from "../test/fakes";

describe("describeError", () => {
  test.each([
    [new ApiError("http", 404, "x", { detail: 'job "j" not found' }), 'Job "j" not found.'],
    [new ApiError("http", 409, "x", { detail: "the script agent does not take messages" }), "The script agent does not take messages."],
    [new ApiError("http", 401, "x", null), "Your token was not accepted (it may have been revoked). Please log in again."],
    [new ApiError("http", 429, "x", null, 7), "Too many requests; try again in 7 s."],
    [new ApiError("http", 500, "x", { detail: "internal error" }), "The server failed (internal error); try again, and check the server's log if it persists."],
    [new ApiError("http", 502, "x", { detail: "sandbox sb_1 is not running: its daemon does not accept connections" }), "Sandbox sb_1 is not running: its daemon does not accept connections."],
    [new ApiError("network", 0, "Failed to fetch"), "Cannot reach the Corral server. Check that `corral up` is running and that this computer is online."],
    [new Error("plain"), "Plain."],
    ["a string", "A string."],
  ])("%#", (err, want) => {
    expect(describeError(err)).toBe(want);
  });

  test("says what was being done", () => {
    expect(describeError(new ApiError("http", 404, "x", { detail: "gone" }), "Cancelling the job")).toBe("Cancelling the job failed: Gone.");
  });
});

describe("errorFromResponse", () => {
  test("reads problem+json", async () => {
    const e = await errorFromResponse(problem(422, 'agent "codex" is not available'));
    expect(e.status).toBe(422);
    expect(e.problem?.detail).toBe('agent "codex" is not available');
    expect(e.retryable).toBe(false);
  });

  test("reads a plain text body and Retry-After", async () => {
    const e = await errorFromResponse(new Response("slow down\n", { status: 429, headers: { "Retry-After": "3", "Content-Type": "text/plain" } }));
    expect(e.problem?.detail).toBe("slow down");
    expect(e.retryAfter).toBe(3);
    expect(e.retryable).toBe(true);
  });

  test("ignores an HTML error page (a proxy in between)", async () => {
    const e = await errorFromResponse(new Response("<html><body>Bad gateway</body></html>", { status: 502, headers: { "Content-Type": "text/html" } }));
    expect(e.problem).toBeNull();
    expect(describeError(e)).toMatch(/not available right now/);
  });
});

describe("networkError", () => {
  test("timeout", () => {
    expect(networkError(new DOMException("t", "TimeoutError"), 30_000).kind).toBe("timeout");
  });
  test("abort", () => {
    expect(networkError(new DOMException("a", "AbortError")).kind).toBe("aborted");
  });
});
