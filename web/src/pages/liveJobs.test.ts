import { describe, expect, test } from "vitest";
import { applyState, fresherRead, mergeJobs } from "./liveJobs";
import type { Job } from "../api/types";

function job(id: string, status: string, created = "2026-01-01T00:00:00Z"): Job {
  return { id, task: "t", agent: "script", status, created_at: created, started_at: null, finished_at: null, result: null, labels: null };
}

function change(to: string, reason?: string) {
  return { job_id: "j", seq: 1, time: "2026-01-01T00:00:05Z", from: "", to, ...(reason ? { reason } : {}) };
}

describe("applyState", () => {
  test.each([
    ["pending", "creating", "creating"],
    ["creating", "running", "running"],
    ["running", "completed", "completed"],
    ["running", "pending", "running"], // stale: never backwards
    ["completed", "running", "completed"],
    ["failed", "cancelled", "failed"], // final is final
    ["running", "cancelled", "cancelled"],
  ])("%s + %s = %s", (from, to, want) => {
    expect(applyState(job("j", from), change(to)).status).toBe(want);
  });

  test("records the reason and the times", () => {
    const j = applyState(applyState(job("j", "creating"), change("running")), change("failed", "timeout"));
    expect(j.status_reason).toBe("timeout");
    expect(j.started_at).toBe("2026-01-01T00:00:05Z");
    expect(j.finished_at).toBe("2026-01-01T00:00:05Z");
  });
});

describe("mergeJobs", () => {
  test("newest first, fresh data wins, no duplicates", () => {
    const cur = [job("a", "running", "2026-01-01T00:00:01Z"), job("b", "pending", "2026-01-01T00:00:02Z")];
    const fresh = [job("a", "completed", "2026-01-01T00:00:01Z"), job("c", "pending", "2026-01-01T00:00:03Z")];
    const got = mergeJobs(cur, fresh);
    expect(got.map((j) => `${j.id}:${j.status}`)).toEqual(["c:pending", "b:pending", "a:completed"]);
  });
});

describe("fresherRead", () => {
  test.each([
    ["creating", "running", "running"],
    ["running", "creating", "running"], // a slow, older read
    ["running", "completed", "completed"],
    ["completed", "running", "completed"],
    ["cancelled", "completing", "cancelled"],
    ["running", "running", "running"],
  ])("%s then %s = %s", (first, then, want) => {
    expect(fresherRead(job("j", first), job("j", then)).status).toBe(want);
  });

  test("an equal read replaces the older one; another job's read is taken as it is", () => {
    const again = { ...job("j", "running"), sandbox_id: "sb_1" };
    expect(fresherRead(job("j", "running"), again)).toBe(again);
    expect(fresherRead(job("j", "completed"), job("k", "pending")).id).toBe("k");
    expect(fresherRead(null, again)).toBe(again);
  });
});
