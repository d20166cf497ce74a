// The job list: live (state changes arrive over /v1/events), filtered by
// status, agent and text, newest first.

import { useMemo } from "react";
import { useSession } from "../app/session";
import { ErrorNote, Spinner, StatusBadge, Empty } from "../components/ui";
import { StreamIndicator } from "../components/StreamIndicator";
import { elapsed, oneLine, relativeTime } from "../lib/format";
import { Link, setQuery, useLocation, useNow, useTitle } from "../lib/router";
import { jobStatuses, isTerminal } from "../api/types";
import { useLiveJobs } from "./liveJobs";

const agents = ["script", "builtin", "claude-code", "codex", "opencode", "gemini"];

export function JobsPage() {
  useTitle("Jobs");
  const { client } = useSession();
  const { query } = useLocation();
  const status = query.get("status") ?? "";
  const agent = query.get("agent") ?? "";
  const text = query.get("q") ?? "";
  const live = useLiveJobs(client, status);
  const now = useNow(5000);

  const shown = useMemo(() => {
    const q = text.trim().toLowerCase();
    return (live.jobs ?? []).filter(
      (j) =>
        (status === "" || (status === "active" ? !isTerminal(j.status) : j.status === status)) &&
        (agent === "" || j.agent === agent) &&
        (q === "" || j.task.toLowerCase().includes(q) || j.id.toLowerCase().includes(q)),
    );
  }, [live.jobs, status, agent, text]);

  return (
    <main className="page">
      <div className="page-head">
        <h1>Jobs</h1>
        <StreamIndicator state={live.stream} />
        <Link to="/jobs/new" className="btn btn-primary">
          New job
        </Link>
      </div>
      <div className="filters" role="search">
        <select className="input" aria-label="Status" value={status} onChange={(e) => setQuery("status", e.target.value)}>
          <option value="">All statuses</option>
          <option value="active">Active</option>
          {jobStatuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select className="input" aria-label="Agent" value={agent} onChange={(e) => setQuery("agent", e.target.value)}>
          <option value="">All agents</option>
          {agents.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <input className="input filter-text" type="search" placeholder="Search task or id" aria-label="Search" value={text} onChange={(e) => setQuery("q", e.target.value)} />
      </div>
      <ErrorNote error={live.error} doing="Loading the jobs" />
      {live.jobs === null && live.error === null && <Spinner label="Loading jobs…" />}
      {live.jobs !== null && shown.length === 0 && (
        <Empty>
          {live.jobs.length === 0 ? (
            <>
              No jobs yet. <Link to="/jobs/new">Submit the first one</Link>.
            </>
          ) : (
            "No job matches these filters."
          )}
        </Empty>
      )}
      {shown.length > 0 && (
        <table className="table table-jobs" data-testid="jobs">
          <thead>
            <tr>
              <th>Task</th>
              <th>Status</th>
              <th className="hide-narrow">Agent</th>
              <th className="hide-narrow">Created</th>
              <th className="hide-narrow num">Run time</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td className="cell-main">
                  <Link to={`/jobs/${encodeURIComponent(j.id)}`} className="row-link">
                    {oneLine(j.task, 100) || <span className="muted">(no task)</span>}
                  </Link>
                  <div className="muted small mono">{j.id}</div>
                </td>
                <td>
                  <StatusBadge status={j.status} reason={j.status_reason} />
                </td>
                <td className="hide-narrow">{j.agent}</td>
                <td className="hide-narrow muted" title={j.created_at}>
                  {relativeTime(j.created_at, now)}
                </td>
                <td className="hide-narrow num muted">{elapsed(j.started_at, j.finished_at, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {live.next && (
        <button type="button" className="btn" onClick={live.loadMore} disabled={live.loadingMore}>
          {live.loadingMore ? "Loading…" : "Load older jobs"}
        </button>
      )}
    </main>
  );
}
