// Plain sandboxes: list, create (with progress: a sandbox may take a few
// seconds to start), delete, and open one for its terminals and files.

import { useState, type FormEvent } from "react";
import { useSession } from "../app/session";
import { describeError } from "../api/errors";
import type { Sandbox, SandboxRequest } from "../api/types";
import { Empty, ErrorNote, Spinner, StatusBadge } from "../components/ui";
import { relativeTime } from "../lib/format";
import { Link, navigate, useNow, useTitle } from "../lib/router";
import { useLoad } from "../lib/useLoad";

export function SandboxesPage() {
  useTitle("Sandboxes");
  const { client } = useSession();
  const list = useLoad((signal) => client.listSandboxes(signal), [client]);
  const now = useNow(1000);
  const [template, setTemplate] = useState("");
  const [runtime, setRuntime] = useState("");
  const [timeout, setTimeoutS] = useState("");
  const [network, setNetwork] = useState("");
  const [creating, setCreating] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [deleteError, setDeleteError] = useState<unknown>(null);

  const create = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    const req: SandboxRequest = {};
    if (template.trim()) req.template = template.trim();
    if (runtime.trim()) req.runtime = runtime.trim();
    if (network) req.network = network;
    if (timeout.trim()) {
      const n = Number(timeout);
      if (!Number.isInteger(n) || n <= 0) {
        setError(new Error("The timeout must be a positive whole number of seconds."));
        return;
      }
      req.timeout_s = n;
    }
    setCreating(Date.now());
    try {
      const sb = await client.createSandbox(req);
      navigate(`/sandboxes/${encodeURIComponent(sb.id)}`);
    } catch (err) {
      setError(err);
      setCreating(null);
    }
  };

  const remove = async (sb: Sandbox): Promise<void> => {
    if (!window.confirm(`Delete sandbox ${sb.id}? Everything in it is lost.`)) return;
    setDeleting(sb.id);
    setDeleteError(null);
    try {
      await client.deleteSandbox(sb.id);
      list.reload();
    } catch (err) {
      setDeleteError(new Error(describeError(err, `Deleting ${sb.id}`)));
    } finally {
      setDeleting(null);
    }
  };

  const sandboxes = list.data?.sandboxes ?? [];
  return (
    <main className="page">
      <div className="page-head">
        <h1>Sandboxes</h1>
        <button type="button" className="btn btn-small" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <form className="card form form-inline" onSubmit={(e) => void create(e)}>
        <label className="field">
          <span className="field-label">Template</span>
          <input className="input" name="template" value={template} onChange={(e) => setTemplate(e.target.value)} placeholder="server default" />
        </label>
        <label className="field">
          <span className="field-label">Runtime</span>
          <input className="input" name="runtime" value={runtime} onChange={(e) => setRuntime(e.target.value)} placeholder="server default" />
        </label>
        <label className="field">
          <span className="field-label">Network</span>
          <select className="input" name="network" value={network} onChange={(e) => setNetwork(e.target.value)}>
            <option value="">none (default)</option>
            <option value="egress">egress</option>
          </select>
        </label>
        <label className="field">
          <span className="field-label">Idle timeout (s)</span>
          <input className="input" name="timeout" inputMode="numeric" value={timeout} onChange={(e) => setTimeoutS(e.target.value)} placeholder="900" />
        </label>
        <button type="submit" className="btn btn-primary" disabled={creating !== null}>
          {creating !== null ? "Creating…" : "Create sandbox"}
        </button>
      </form>
      {creating !== null && <Spinner label={`Creating the sandbox… ${Math.max(0, Math.round((now - creating) / 1000))} s`} />}
      <ErrorNote error={error} doing="Creating the sandbox" />
      <ErrorNote error={deleteError} />
      <ErrorNote error={list.error} doing="Loading the sandboxes" onRetry={list.reload} />
      {list.loading && !list.data && <Spinner label="Loading sandboxes…" />}
      {list.data && sandboxes.length === 0 && <Empty>No sandboxes. Create one above to get a terminal and files.</Empty>}
      {sandboxes.length > 0 && (
        <table className="table" data-testid="sandboxes">
          <thead>
            <tr>
              <th>Sandbox</th>
              <th>Status</th>
              <th className="hide-narrow">Runtime</th>
              <th className="hide-narrow">Template</th>
              <th className="hide-narrow">Created</th>
              <th><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {sandboxes.map((sb) => (
              <tr key={sb.id} data-sandbox={sb.id}>
                <td className="cell-main">
                  <Link to={`/sandboxes/${encodeURIComponent(sb.id)}`} className="row-link mono">
                    {sb.id}
                  </Link>
                  {sb.labels && Object.keys(sb.labels).length > 0 && (
                    <div className="muted small">{Object.entries(sb.labels).map(([k, v]) => `${k}=${v}`).join(" ")}</div>
                  )}
                </td>
                <td><StatusBadge status={sb.status} /></td>
                <td className="hide-narrow">{sb.runtime}</td>
                <td className="hide-narrow">{sb.template}</td>
                <td className="hide-narrow muted">{relativeTime(sb.created_at, now)}</td>
                <td className="row-actions">
                  <button type="button" className="btn btn-small btn-quiet" onClick={() => void remove(sb)} disabled={deleting === sb.id}>
                    {deleting === sb.id ? "Deleting…" : "Delete"}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
