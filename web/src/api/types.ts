// The API's types as the UI uses them. Control-plane types are checked
// against the generated description of /openapi.json (schema.gen.ts, made
// by `npm run gen:api`): each Conforms<> below fails to compile if the UI
// reads a field the API does not have, or types it differently. The
// sandbox daemon's types (processes, files) mirror api/sandboxapi, whose
// routes the control plane passes through untyped.
import type { operations } from "./schema.gen";

type Operation = keyof operations;
type Responses<Op extends Operation> = operations[Op]["responses"];
/** JSONBody is the JSON body of operation Op's response S. */
export type JSONBody<Op extends Operation, S extends keyof Responses<Op>> =
  Responses<Op>[S] extends { content: { "application/json": infer T } } ? T : never;
/** RequestBody is the JSON request body of operation Op. */
export type RequestBody<Op extends Operation> = operations[Op] extends {
  requestBody: { content: { "application/json": infer T } };
}
  ? T
  : never;

/** Conforms is true when every field of Mine exists in Wire with a compatible type. */
type Conforms<Mine, Wire> = {
  [K in keyof Mine]-?: K extends keyof Wire ? (Mine[K] extends Wire[K] ? true : false) : false;
}[keyof Mine] extends true
  ? true
  : false;
type Assert<T extends true> = T;

export type JobStatus = "pending" | "creating" | "running" | "completing" | "completed" | "failed" | "cancelled";

export const jobStatuses: readonly JobStatus[] = ["pending", "creating", "running", "completing", "completed", "failed", "cancelled"];

export function isTerminal(s: string): boolean {
  return s === "completed" || s === "failed" || s === "cancelled";
}

export interface JobResult {
  summary?: string;
  exit_code?: number | null;
  branch?: string;
  pr_url?: string;
}

export interface Job {
  id: string;
  task: string;
  agent: string;
  status: string;
  status_reason?: string;
  sandbox_id?: string;
  runtime?: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  result: JobResult | null;
  labels: Record<string, string> | null;
}
export type CheckJob = Assert<Conforms<Job, JSONBody<"get_jobs_id", 200>>>;

export interface JobList {
  jobs: Job[] | null;
  next?: string;
}
export type CheckJobList = Assert<Conforms<JobList, JSONBody<"get_jobs", 200>>>;

export type JobRequest = RequestBody<"post_jobs">;
export type SandboxRequest = RequestBody<"post_sandboxes">;
export type Resources = NonNullable<JobRequest["resources"]>;

/** JobEvent is one entry of a job's log; data depends on type (events.ts). */
export interface JobEvent {
  seq: number;
  job_id: string;
  time: string;
  type: string;
  data: unknown;
}
type WireEvent = NonNullable<JSONBody<"get_jobs_id_events", 200>["events"]>[number];
export type CheckEvent = Assert<Conforms<JobEvent, WireEvent>>;

export interface Sandbox {
  id: string;
  status: string;
  runtime: string;
  template: string;
  created_at: string;
  expires_at: string | null;
  labels?: Record<string, string> | null;
}
export type CheckSandbox = Assert<Conforms<Sandbox, JSONBody<"get_sandboxes_id", 200>>>;

export interface SandboxList {
  sandboxes: Sandbox[] | null;
}
export type CheckSandboxList = Assert<Conforms<SandboxList, JSONBody<"get_sandboxes", 200>>>;

/** TenantEvent is an event of GET /v1/events (cpapi.TenantEvent): a job changed state. */
export interface TenantEvent {
  job_id: string;
  seq: number;
  time: string;
  from: string;
  to: string;
  reason?: string;
}

// ---- sandbox daemon (api/sandboxapi), reached through /v1/sandboxes/{id}/...

export interface Process {
  id: string;
  tag?: string;
  label?: string;
  command: string;
  args: string[] | null;
  cwd: string;
  pid: number;
  pty: boolean;
  rows?: number;
  cols?: number;
  status: "running" | "exited";
  exit_code: number | null;
  signal: string | null;
  created_at: string;
  exited_at: string | null;
  output_bytes: number;
}

export interface ProcessList {
  processes: Process[] | null;
}

export interface SpawnRequest {
  command: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  pty?: { rows: number; cols: number };
  tag?: string;
  label?: string;
  stdin?: boolean;
}

export type FileType = "file" | "dir" | "symlink" | "other";

export interface FileInfo {
  path: string;
  name: string;
  type: FileType;
  size: number;
  mode: string;
  mtime: string;
  target?: string;
}

export interface FileList {
  entries: FileInfo[] | null;
  truncated: boolean;
}

/** DesktopStatus mirrors api/sandboxapi.DesktopStatus (GET .../desktop/status). */
export interface DesktopStatus {
  running: boolean;
  vnc: boolean;
  width?: number;
  height?: number;
}
