// The new-job form (POST /v1/jobs): task, agent (and its command or
// model), repository, runtime and template, resources, network, timeout,
// environment. Empty fields are left out, so the server's defaults apply.

import { useState, type FormEvent } from "react";
import { useSession } from "../app/session";
import type { JobRequest, Resources } from "../api/types";
import { ErrorNote } from "../components/ui";
import { navigate, useTitle } from "../lib/router";

interface FormState {
  task: string;
  agent: string;
  command: string;
  model: string;
  repoURL: string;
  repoRef: string;
  runtime: string;
  template: string;
  cpus: string;
  memory: string;
  pids: string;
  disk: string;
  network: string;
  timeout: string;
  env: string;
}

const initial: FormState = {
  task: "", agent: "script", command: "", model: "", repoURL: "", repoRef: "", runtime: "", template: "",
  cpus: "", memory: "", pids: "", disk: "", network: "", timeout: "", env: "",
};

/** parseEnv reads KEY=VALUE lines; it throws on a malformed line. */
export function parseEnv(text: string): Record<string, string> | undefined {
  const env: Record<string, string> = {};
  let n = 0;
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    const key = eq > 0 ? line.slice(0, eq).trim() : "";
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`Environment line ${i + 1} is not KEY=VALUE.`);
    env[key] = line.slice(eq + 1);
    n++;
  }
  return n ? env : undefined;
}

function positive(label: string, v: string, integer: boolean): number | undefined {
  if (v.trim() === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new Error(`${label} must be a positive ${integer ? "whole " : ""}number.`);
  return n;
}

/** buildRequest turns the form into a job request, or throws a readable error. */
export function buildRequest(f: FormState): JobRequest {
  const task = f.task.trim();
  if (!task) throw new Error("Describe the task.");
  const req: JobRequest = { task, agent: f.agent };
  if (f.agent === "script") {
    if (!f.command.trim()) throw new Error("A script job needs a command to run.");
    req.command = f.command;
  } else if (f.model.trim()) {
    req.model = f.model.trim();
  }
  if (f.repoURL.trim()) req.repo = { url: f.repoURL.trim(), ...(f.repoRef.trim() ? { ref: f.repoRef.trim() } : {}) };
  if (f.runtime.trim()) req.runtime = f.runtime.trim();
  if (f.template.trim()) req.template = f.template.trim();
  const res: Resources = {};
  const cpus = positive("CPUs", f.cpus, false);
  const mem = positive("Memory", f.memory, true);
  const pids = positive("Processes", f.pids, true);
  const disk = positive("Disk", f.disk, true);
  if (cpus !== undefined) res.cpus = cpus;
  if (mem !== undefined) res.memory_mb = mem;
  if (pids !== undefined) res.pids = pids;
  if (disk !== undefined) res.disk_mb = disk;
  if (Object.keys(res).length) req.resources = res;
  if (f.network) req.network = f.network;
  const timeout = positive("Timeout", f.timeout, true);
  if (timeout !== undefined) req.timeout_s = timeout;
  const env = parseEnv(f.env);
  if (env) req.env = env;
  return req;
}

export function NewJobPage() {
  useTitle("New job");
  const { client } = useSession();
  const [f, setF] = useState<FormState>(initial);
  const [error, setError] = useState<unknown>(null);
  const [submitting, setSubmitting] = useState(false);
  const set = (k: keyof FormState) => (e: { target: { value: string } }) => setF((cur) => ({ ...cur, [k]: e.target.value }));

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    let req: JobRequest;
    try {
      req = buildRequest(f);
    } catch (err) {
      setError(err);
      return;
    }
    setSubmitting(true);
    try {
      const job = await client.createJob(req);
      navigate(`/jobs/${encodeURIComponent(job.id)}`);
    } catch (err) {
      setError(err);
      setSubmitting(false);
    }
  };

  return (
    <main className="page page-narrow">
      <h1>New job</h1>
      <form className="card form" onSubmit={(e) => void submit(e)} noValidate>
        <label className="field">
          <span className="field-label">Task</span>
          <textarea className="input" rows={3} name="task" value={f.task} onChange={set("task")} placeholder="Build me a todo app in React" required />
        </label>
        <div className="grid-2">
          <label className="field">
            <span className="field-label">Agent</span>
            <select className="input" name="agent" value={f.agent} onChange={set("agent")}>
              <option value="script">script — run a command</option>
              <option value="builtin">builtin — Corral's LLM agent</option>
              <option value="claude-code">claude-code</option>
              <option value="codex">codex</option>
              <option value="opencode">opencode</option>
              <option value="gemini">gemini</option>
            </select>
          </label>
          {f.agent === "script" ? (
            <label className="field">
              <span className="field-label">Command</span>
              <input className="input mono" name="command" value={f.command} onChange={set("command")} placeholder="npm test" />
            </label>
          ) : (
            <label className="field">
              <span className="field-label">Model</span>
              <input className="input mono" name="model" value={f.model} onChange={set("model")} placeholder="openai/gpt-4.1 or anthropic/…" />
            </label>
          )}
        </div>
        <fieldset className="fieldset">
          <legend>Repository (optional)</legend>
          <div className="grid-2">
            <label className="field">
              <span className="field-label">URL</span>
              <input className="input mono" name="repo" value={f.repoURL} onChange={set("repoURL")} placeholder="https://github.com/owner/repo" />
            </label>
            <label className="field">
              <span className="field-label">Branch or ref</span>
              <input className="input mono" name="ref" value={f.repoRef} onChange={set("repoRef")} placeholder="main" />
            </label>
          </div>
        </fieldset>
        <details className="fieldset-details">
          <summary>Sandbox: runtime, template, resources, network, timeout, environment</summary>
          <div className="grid-2">
            <label className="field">
              <span className="field-label">Runtime</span>
              <input className="input" name="runtime" value={f.runtime} onChange={set("runtime")} placeholder="server default (docker, containerd, bwrap…)" />
            </label>
            <label className="field">
              <span className="field-label">Template</span>
              <input className="input" name="template" value={f.template} onChange={set("template")} placeholder="server default" />
            </label>
            <label className="field">
              <span className="field-label">CPUs</span>
              <input className="input" name="cpus" inputMode="decimal" value={f.cpus} onChange={set("cpus")} placeholder="no limit" />
            </label>
            <label className="field">
              <span className="field-label">Memory (MiB)</span>
              <input className="input" name="memory" inputMode="numeric" value={f.memory} onChange={set("memory")} placeholder="no limit" />
            </label>
            <label className="field">
              <span className="field-label">Processes</span>
              <input className="input" name="pids" inputMode="numeric" value={f.pids} onChange={set("pids")} placeholder="no limit" />
            </label>
            <label className="field">
              <span className="field-label">Disk (MiB)</span>
              <input className="input" name="disk" inputMode="numeric" value={f.disk} onChange={set("disk")} placeholder="no limit" />
            </label>
            <label className="field">
              <span className="field-label">Network</span>
              <select className="input" name="network" value={f.network} onChange={set("network")}>
                <option value="">none (default)</option>
                <option value="none">none</option>
                <option value="egress">egress</option>
              </select>
            </label>
            <label className="field">
              <span className="field-label">Timeout (seconds)</span>
              <input className="input" name="timeout" inputMode="numeric" value={f.timeout} onChange={set("timeout")} placeholder="3600" />
            </label>
          </div>
          <label className="field">
            <span className="field-label">Environment (KEY=VALUE per line)</span>
            <textarea className="input mono" rows={3} name="env" value={f.env} onChange={set("env")} />
          </label>
        </details>
        <ErrorNote error={error} doing="Submitting the job" />
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={submitting}>
            {submitting ? "Submitting…" : "Submit job"}
          </button>
          <button type="button" className="btn btn-quiet" onClick={() => navigate("/jobs")}>
            Cancel
          </button>
        </div>
      </form>
    </main>
  );
}
