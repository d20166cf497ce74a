// One job: its header (status live, actions), and tabs: the timeline
// with the message box, terminals and files of its sandbox while it runs,
// its desktop when the sandbox has one, and its changes and artifacts.

import { useCallback, useEffect, useState } from "react";
import { useSession } from "../app/session";
import { isTerminal, type Job, type JobResult } from "../api/types";
import type { StateData } from "../api/events";
import { applyState, fresherRead } from "./liveJobs";
import { ApiError, describeError } from "../api/errors";
import { DesktopPanel, useDesktop } from "../components/DesktopPanel";
import { DiffView, FilesPanel, Terminals } from "../components/lazy";
import { MessageBox } from "../components/MessageBox";
import { StreamIndicator } from "../components/StreamIndicator";
import { Empty, ErrorNote, Note, ProgressBar, Spinner, StatusBadge, Tabs, type TabSpec } from "../components/ui";
import { saveBlob } from "../lib/download";
import { elapsed, fullTime, relativeTime } from "../lib/format";
import { Link, setQuery, useLocation, useNow, useTitle } from "../lib/router";
import { useLoad } from "../lib/useLoad";
import { TimelineView } from "../timeline/TimelineView";
import { useJobEvents } from "../timeline/useJobEvents";

export function JobPage({ id }: { id: string }) {
  const { client } = useSession();
  const { query } = useLocation();
  const tab = query.get("tab") ?? "timeline";
  const loaded = useLoad((signal) => client.getJob(id, signal), [client, id]);
  const events = useJobEvents(client, id);
  const now = useNow(1000);
  // read is the freshest read of the job; job is it with the stream's
  // latest state applied.
  const [read, setRead] = useState<Job | null>(null);
  const take = useCallback((j: Job) => setRead((cur) => fresherRead(cur, j)), []);
  const [actionError, setActionError] = useState<unknown>(null);
  const [cancelling, setCancelling] = useState(false);
  const [download, setDownload] = useState<{ loaded: number; total: number | null } | null>(null);

  // The job's status follows its event stream, which may be ahead of (or
  // behind) a read of the job: a state only ever moves forward.
  const live = events.lastState;
  useEffect(() => {
    if (loaded.data) take(loaded.data);
  }, [loaded.data, take]);
  const job = read ? withState(read, live) : null;
  useTitle(job ? job.task.slice(0, 60) : "Job");
  // When the stream says the job started (its sandbox) or ended (its
  // result) and the read does not have that yet, read again until it does:
  // a read may fail, or answer from before the change.
  const behind = read !== null && job !== null && job.status !== read.status && (job.status === "running" || isTerminal(job.status));
  useEffect(() => {
    if (!behind) return undefined;
    const ctl = new AbortController();
    let timer: number | undefined;
    let delay = 500;
    const readAgain = (): void => {
      void client
        .getJob(id, ctl.signal)
        .then(take, () => {})
        .then(() => {
          if (ctl.signal.aborted) return;
          timer = window.setTimeout(readAgain, delay);
          delay = Math.min(delay * 2, 5000);
        });
    };
    readAgain();
    return () => {
      ctl.abort();
      window.clearTimeout(timer);
    };
  }, [behind, client, id, take]);

  const desktop = useDesktop(client, job && !isTerminal(job.status) ? job.sandbox_id : null);

  if (loaded.error && !job) {
    return (
      <main className="page">
        <p><Link to="/jobs">← Jobs</Link></p>
        <ErrorNote error={loaded.error} doing="Loading the job" onRetry={loaded.reload} />
      </main>
    );
  }
  if (!job) return <main className="page"><Spinner label="Loading the job…" /></main>;

  const ended = isTerminal(job.status);
  const sandbox = !ended && job.sandbox_id ? job.sandbox_id : null;

  const cancel = async (): Promise<void> => {
    if (!window.confirm("Cancel this job? Its sandbox will be removed.")) return;
    setCancelling(true);
    setActionError(null);
    try {
      take(await client.cancelJob(id));
    } catch (err) {
      setActionError(new Error(describeError(err, "Cancelling the job")));
    } finally {
      setCancelling(false);
    }
  };

  const downloadArtifacts = async (): Promise<void> => {
    setActionError(null);
    setDownload({ loaded: 0, total: null });
    try {
      const { blob, filename } = await client.download(`/v1/jobs/${encodeURIComponent(id)}/artifacts`, {
        timeoutMs: 120_000,
        onProgress: (l, t) => setDownload({ loaded: l, total: t }),
      });
      saveBlob(blob, filename ?? `${id}.zip`);
    } catch (err) {
      setActionError(new Error(describeError(err, "Downloading the artifacts")));
    } finally {
      setDownload(null);
    }
  };

  const tabs: TabSpec[] = [
    { id: "timeline", label: `Timeline${events.count ? ` (${events.count})` : ""}` },
    { id: "terminal", label: "Terminal" },
    { id: "files", label: "Files" },
    ...(desktop ? [{ id: "desktop", label: "Desktop" }] : []),
    { id: "changes", label: "Changes" },
  ];
  const messageDisabled = ended ? `The job is ${job.status}: it takes no more messages.` : job.agent === "script" ? "The script agent runs a command: it does not take messages. Use the Terminal tab to type into its sandbox." : null;
  const hasArtifacts = job.status === "completed" || job.status === "failed";

  return (
    <main className="page page-job">
      <p className="back"><Link to="/jobs">← Jobs</Link></p>
      <div className="job-head">
        <div className="job-title">
          <h1 data-testid="job-task">{job.task}</h1>
          <div className="job-meta">
            <StatusBadge status={job.status} reason={job.status_reason} />
            <span className="mono muted small">{job.id}</span>
            <span className="muted small">{job.agent}</span>
            {job.runtime && <span className="muted small">on {job.runtime}</span>}
            <span className="muted small" title={fullTime(job.created_at)}>created {relativeTime(job.created_at, now)}</span>
            {job.started_at && <span className="muted small">ran {elapsed(job.started_at, job.finished_at, now)}</span>}
          </div>
        </div>
        <div className="job-actions">
          {!ended && (
            <button type="button" className="btn btn-danger" onClick={() => void cancel()} disabled={cancelling}>
              {cancelling ? "Cancelling…" : "Cancel job"}
            </button>
          )}
          {hasArtifacts && (
            <button type="button" className="btn" onClick={() => void downloadArtifacts()} disabled={download !== null}>
              Download artifacts
            </button>
          )}
        </div>
      </div>
      {download && <ProgressBar label="Downloading the artifacts" loaded={download.loaded} total={download.total} />}
      <ErrorNote error={actionError} />
      {job.result && <ResultCard result={job.result} />}
      <Tabs tabs={tabs} active={tab} onSelect={(t) => setQuery("tab", t === "timeline" ? null : t)} label="Job views" />
      <section className="tab-panel">
        {tab === "timeline" && (
          <>
            <div className="panel-head">
              <StreamIndicator state={events.stream} endedLabel={`Ended · ${events.count} events`} />
            </div>
            {events.items.length === 0 && events.stream.kind !== "failed" && <Spinner label="Waiting for the first events…" />}
            {events.stream.kind === "failed" && <ErrorNote error={events.stream.error} doing="Following the job" />}
            <TimelineView items={events.items} live={!ended} />
            {messageDisabled === null ? (
              <MessageBox client={client} jobID={id} />
            ) : (
              !ended && <p className="muted small message-off">{messageDisabled}</p>
            )}
          </>
        )}
        {tab === "terminal" && (sandbox ? <Terminals client={client} sandboxID={sandbox} attach={`job-${id}`} /> : <NoSandbox job={job} />)}
        {tab === "files" && (sandbox ? <FilesPanel client={client} sandboxID={sandbox} /> : <NoSandbox job={job} />)}
        {tab === "desktop" && (sandbox && desktop ? <DesktopPanel client={client} sandboxID={sandbox} initial={desktop} /> : <Empty>This job's sandbox has no desktop.</Empty>)}
        {tab === "changes" && <Changes id={id} job={job} />}
      </section>
    </main>
  );
}

/** withState is j with the state change st applied, if st moves it forward. */
function withState(j: Job, st: StateData | null): Job {
  if (!st) return j;
  return applyState(j, { job_id: j.id, seq: 0, time: "", from: st.from, to: st.to, ...(st.reason ? { reason: st.reason } : {}) });
}

function ResultCard({ result }: { result: JobResult }) {
  const [open, setOpen] = useState(false);
  const summary = result.summary?.trimEnd() ?? "";
  const long = summary.split("\n").length > 4 || summary.length > 400;
  const facts = [
    result.exit_code !== undefined && result.exit_code !== null ? <span key="exit">exit code {result.exit_code}</span> : null,
    result.branch ? <span key="branch">branch <code>{result.branch}</code></span> : null,
    result.pr_url ? (
      <a key="pr" href={result.pr_url} target="_blank" rel="noreferrer noopener">
        pull request ↗
      </a>
    ) : null,
  ].filter(Boolean);
  if (!summary && facts.length === 0) return null;
  return (
    <div className="result card" data-testid="result">
      <div className="result-meta">
        <strong>Result</strong>
        {facts}
      </div>
      {summary && (
        <>
          <pre className={open || !long ? "result-summary" : "result-summary result-clamped"}>{summary}</pre>
          {long && (
            <button type="button" className="link-button small" onClick={() => setOpen(!open)}>
              {open ? "Show less" : "Show all"}
            </button>
          )}
        </>
      )}
    </div>
  );
}

function NoSandbox({ job }: { job: Job }) {
  if (isTerminal(job.status)) {
    return (
      <Empty>
        The job is {job.status}, so its sandbox is gone. The workspace is in the artifacts{job.status === "cancelled" ? " (cancelled jobs have none)" : ""}.
      </Empty>
    );
  }
  return <Empty><Spinner label="Waiting for the job's sandbox…" /></Empty>;
}

function Changes({ id, job }: { id: string; job: Job }) {
  const { client } = useSession();
  const ended = job.status === "completed" || job.status === "failed";
  const diff = useLoad((signal) => (ended ? client.jobDiff(id, signal) : Promise.resolve(null)), [client, id, ended]);
  const download = (): void => {
    if (diff.data) saveBlob(new Blob([diff.data], { type: "text/x-diff" }), `${id}.patch`);
  };
  if (!ended) return <Note>The changes are collected when the job finishes.</Note>;
  return (
    <div className="changes">
      {diff.loading && <Spinner label="Loading the diff…" />}
      {diff.error instanceof ApiError && diff.error.status === 404 ? (
        <Empty>{describeError(diff.error)}</Empty>
      ) : (
        <ErrorNote error={diff.error} doing="Loading the diff" onRetry={diff.reload} />
      )}
      {diff.data !== null && (
        <>
          <div className="panel-head">
            <button type="button" className="btn btn-small" onClick={download}>
              Download .patch
            </button>
          </div>
          <DiffView diff={diff.data} />
        </>
      )}
    </div>
  );
}
