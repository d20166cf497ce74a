import { describe, expect, test } from "vitest";
import { match } from "./router";
import { safeNext } from "../app/App";
import { languageOf } from "./highlight";
import { filenameOf } from "../api/client";
import { joinPath, looksBinary, parentOf } from "../components/FilesPanel";
import { stripANSI } from "../timeline/TimelineView";

describe("match", () => {
  const q = new URLSearchParams("next=/jobs/j1");
  test.each([
    ["/", { page: "jobs" }],
    ["/jobs", { page: "jobs" }],
    ["/jobs/", { page: "jobs" }],
    ["/jobs/new", { page: "new-job" }],
    ["/jobs/job_1", { page: "job", id: "job_1" }],
    ["/jobs/job%201", { page: "job", id: "job 1" }],
    ["/jobs/%E0%A4%A", { page: "job", id: "%E0%A4%A" }],
    ["/sandboxes", { page: "sandboxes" }],
    ["/sandboxes/sb_1", { page: "sandbox", id: "sb_1" }],
    ["/login", { page: "login", next: "/jobs/j1" }],
    ["/jobs/a/b", { page: "not-found", path: "/jobs/a/b" }],
    ["/elsewhere", { page: "not-found", path: "/elsewhere" }],
  ])("%s", (path, want) => {
    expect(match(path, q)).toEqual(want);
  });
});

describe("safeNext", () => {
  test.each([
    ["/jobs/j1", "/jobs/j1"],
    ["//evil.example/x", "/jobs"],
    ["https://evil.example", "/jobs"],
    ["/login?next=/login", "/jobs"],
    ["", "/jobs"],
  ])("%s → %s", (next, want) => {
    expect(safeNext(next)).toBe(want);
  });
});

describe("helpers", () => {
  test.each([
    ["main.go", "go"],
    ["src/App.tsx", "typescript"],
    ["Dockerfile", "dockerfile"],
    ["Makefile", "makefile"],
    ["x.unknown", "plaintext"],
    ["README", "plaintext"],
  ])("languageOf(%s) = %s", (name, want) => {
    expect(languageOf(name)).toBe(want);
  });

  test.each([
    ['attachment; filename="job_1.zip"', "job_1.zip"],
    ["attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt", "résumé.txt"],
    ['attachment; filename="../../etc/passwd"', ".._.._etc_passwd"],
    [null, null],
  ])("filenameOf(%s)", (cd, want) => {
    expect(filenameOf(cd)).toBe(want);
  });

  test("paths", () => {
    expect(joinPath("/workspace", "a")).toBe("/workspace/a");
    expect(joinPath("/", "a")).toBe("/a");
    expect(parentOf("/workspace/a")).toBe("/workspace");
    expect(parentOf("/workspace")).toBe("/");
    expect(looksBinary(new Uint8Array([104, 105, 0]))).toBe(true);
    expect(looksBinary(new TextEncoder().encode("héllo"))).toBe(false);
  });
});

describe("stripANSI", () => {
  test.each([
    ["\x1b[31mred\x1b[0m plain", "red plain"],
    ["\x1b]0;title\x07after", "after"],
    ["no escapes", "no escapes"],
    ["\x1b[2K\x1b[1Gprogress", "progress"],
  ])("%j", (input, want) => {
    expect(stripANSI(input)).toBe(want);
  });
});
