// Small shared pieces: spinner, error notes, progress, badges, tabs.

import { useId, useRef, type KeyboardEvent, type ReactNode } from "react";
import { describeError } from "../api/errors";
import { formatBytes } from "../lib/format";

export function Spinner({ label = "Loading…" }: { label?: string }) {
  return (
    <span className="spinner" role="status">
      <span className="spinner-dot" aria-hidden="true" />
      {label}
    </span>
  );
}

/** ErrorNote shows an error as a sentence, with an optional retry. */
export function ErrorNote({ error, doing, onRetry }: { error: unknown; doing?: string; onRetry?: () => void }) {
  if (error === null || error === undefined) return null;
  return (
    <div className="note note-error" role="alert">
      <span>{describeError(error, doing)}</span>
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Note({ kind = "info", children }: { kind?: "info" | "warn" | "ok"; children: ReactNode }) {
  return <div className={`note note-${kind}`}>{children}</div>;
}

/** ProgressBar shows a transfer; an unknown total shows the bytes so far. */
export function ProgressBar({ label, loaded, total }: { label: string; loaded: number; total: number | null }) {
  const pct = total ? Math.min(100, Math.round((loaded / total) * 100)) : null;
  return (
    <div className="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct ?? undefined}>
      <div className="progress-label">
        {label} — {formatBytes(loaded)}
        {total ? ` of ${formatBytes(total)} (${pct}%)` : ""}
      </div>
      <div className="progress-track">
        <div className={pct === null ? "progress-fill progress-indeterminate" : "progress-fill"} style={pct === null ? undefined : { width: `${pct}%` }} />
      </div>
    </div>
  );
}

const statusTone: Record<string, string> = {
  pending: "muted",
  creating: "info",
  running: "info",
  completing: "info",
  completed: "ok",
  failed: "bad",
  cancelled: "warn",
  exited: "muted",
};

export function StatusBadge({ status, reason }: { status: string; reason?: string | undefined }) {
  const tone = statusTone[status] ?? "muted";
  const live = status === "running" || status === "creating" || status === "completing";
  return (
    <span className={`badge badge-${tone}`} title={reason ? `${status}: ${reason}` : status} data-status={status}>
      {live && <span className="badge-pulse" aria-hidden="true" />}
      {status}
      {reason && reason !== status && status !== "completed" ? <span className="badge-reason"> · {reason.replace(/_/g, " ")}</span> : null}
    </span>
  );
}

export interface TabSpec {
  id: string;
  label: ReactNode;
}

/** Tabs is an accessible tab list (arrow keys move between tabs). */
export function Tabs({ tabs, active, onSelect, label }: { tabs: TabSpec[]; active: string; onSelect: (id: string) => void; label: string }) {
  const base = useId();
  const refs = useRef<Record<string, HTMLButtonElement | null>>({});
  const onKey = (e: KeyboardEvent<HTMLDivElement>): void => {
    const i = tabs.findIndex((t) => t.id === active);
    let j = -1;
    if (e.key === "ArrowRight") j = (i + 1) % tabs.length;
    else if (e.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
    else return;
    e.preventDefault();
    const t = tabs[j];
    if (t) {
      onSelect(t.id);
      refs.current[t.id]?.focus();
    }
  };
  return (
    <div className="tabs" role="tablist" aria-label={label} onKeyDown={onKey}>
      {tabs.map((t) => (
        <button
          key={t.id}
          id={`${base}-${t.id}`}
          ref={(el) => {
            refs.current[t.id] = el;
          }}
          type="button"
          role="tab"
          aria-selected={t.id === active}
          tabIndex={t.id === active ? 0 : -1}
          className={t.id === active ? "tab tab-active" : "tab"}
          onClick={() => onSelect(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}
