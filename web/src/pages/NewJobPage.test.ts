import { describe, expect, test } from "vitest";
import { buildRequest, parseEnv } from "./NewJobPage";

const base = {
  task: "build it", agent: "script", command: "make", model: "", repoURL: "", repoRef: "", runtime: "", template: "",
  cpus: "", memory: "", pids: "", disk: "", network: "", timeout: "", env: "",
};

describe("buildRequest", () => {
  test("empty fields are left out, so the server's defaults apply", () => {
    expect(buildRequest(base)).toEqual({ task: "build it", agent: "script", command: "make" });
  });

  test("everything filled", () => {
    expect(
      buildRequest({
        ...base, agent: "builtin", model: "openai/gpt", repoURL: " https://g/x ", repoRef: "main", runtime: "docker", template: "default",
        cpus: "1.5", memory: "2048", pids: "512", disk: "4096", network: "egress", timeout: "600", env: "A=1\n# note\nB=x=y\n",
      }),
    ).toEqual({
      task: "build it", agent: "builtin", model: "openai/gpt", repo: { url: "https://g/x", ref: "main" }, runtime: "docker", template: "default",
      resources: { cpus: 1.5, memory_mb: 2048, pids: 512, disk_mb: 4096 }, network: "egress", timeout_s: 600, env: { A: "1", B: "x=y" },
    });
  });

  test.each([
    [{ task: "  " }, "Describe the task."],
    [{ command: "" }, "A script job needs a command to run."],
    [{ memory: "1.5" }, "Memory must be a positive whole number."],
    [{ cpus: "-1" }, "CPUs must be a positive number."],
    [{ timeout: "abc" }, "Timeout must be a positive whole number."],
    [{ env: "not a pair" }, "Environment line 1 is not KEY=VALUE."],
    [{ env: "1BAD=x" }, "Environment line 1 is not KEY=VALUE."],
  ])("%o is refused", (patch, msg) => {
    expect(() => buildRequest({ ...base, ...patch })).toThrow(msg);
  });
});

describe("parseEnv", () => {
  test("blank and comment lines", () => {
    expect(parseEnv("\n  # x\n")).toBeUndefined();
    expect(parseEnv("K= spaced value ")).toEqual({ K: " spaced value" });
  });
});
