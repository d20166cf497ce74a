// One sandbox: terminals, files, and its desktop when it has one.

import { useState } from "react";
import { useSession } from "../app/session";
import { describeError } from "../api/errors";
import { DesktopPanel, useDesktop } from "../components/DesktopPanel";
import { FilesPanel, Terminals } from "../components/lazy";
import { Empty, ErrorNote, Spinner, StatusBadge, Tabs, type TabSpec } from "../components/ui";
import { fullTime, relativeTime } from "../lib/format";
import { Link, navigate, setQuery, useLocation, useNow, useTitle } from "../lib/router";
import { useLoad } from "../lib/useLoad";

export function SandboxPage({ id }: { id: string }) {
  useTitle(`Sandbox ${id}`);
  const { client } = useSession();
  const { query } = useLocation();
  const tab = query.get("tab") ?? "terminal";
  const sb = useLoad((signal) => client.getSandbox(id, signal), [client, id]);
  const desktop = useDesktop(client, sb.data ? id : null);
  const now = useNow(5000);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState(false);

  const remove = async (): Promise<void> => {
    if (!window.confirm(`Delete sandbox ${id}? Everything in it is lost.`)) return;
    setDeleting(true);
    try {
      await client.deleteSandbox(id);
      navigate("/sandboxes");
    } catch (err) {
      setError(new Error(describeError(err, "Deleting the sandbox")));
      setDeleting(false);
    }
  };

  if (sb.error && !sb.data) {
    return (
      <main className="page">
        <p className="back"><Link to="/sandboxes">← Sandboxes</Link></p>
        <ErrorNote error={sb.error} doing="Loading the sandbox" onRetry={sb.reload} />
      </main>
    );
  }
  if (!sb.data) return <main className="page"><Spinner label="Loading the sandbox…" /></main>;
  const s = sb.data;
  const tabs: TabSpec[] = [
    { id: "terminal", label: "Terminal" },
    { id: "files", label: "Files" },
    ...(desktop ? [{ id: "desktop", label: "Desktop" }] : []),
  ];
  return (
    <main className="page page-job">
      <p className="back"><Link to="/sandboxes">← Sandboxes</Link></p>
      <div className="job-head">
        <div className="job-title">
          <h1 className="mono">{s.id}</h1>
          <div className="job-meta">
            <StatusBadge status={s.status} />
            <span className="muted small">{s.runtime}</span>
            <span className="muted small">{s.template}</span>
            <span className="muted small" title={fullTime(s.created_at)}>created {relativeTime(s.created_at, now)}</span>
            {s.expires_at && <span className="muted small" title={fullTime(s.expires_at)}>expires when idle after {fullTime(s.expires_at)}</span>}
          </div>
        </div>
        <div className="job-actions">
          <button type="button" className="btn btn-danger" onClick={() => void remove()} disabled={deleting}>
            {deleting ? "Deleting…" : "Delete sandbox"}
          </button>
        </div>
      </div>
      <ErrorNote error={error} />
      <Tabs tabs={tabs} active={tab} onSelect={(t) => setQuery("tab", t === "terminal" ? null : t)} label="Sandbox views" />
      <section className="tab-panel">
        {tab === "terminal" && <Terminals client={client} sandboxID={id} />}
        {tab === "files" && <FilesPanel client={client} sandboxID={id} />}
        {tab === "desktop" && (desktop ? <DesktopPanel client={client} sandboxID={id} initial={desktop} /> : <Empty>This sandbox has no desktop.</Empty>)}
      </section>
    </main>
  );
}
