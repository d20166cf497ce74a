// Terminal tabs of one sandbox: open a new shell, attach to any of the
// sandbox's processes, several at once. The open tabs are remembered for
// this browser tab (sessionStorage), so a reload reattaches them and
// replays their output.

import { useCallback, useEffect, useMemo, useState } from "react";
import type { Client } from "../api/client";
import type { Process } from "../api/types";
import { ErrorNote, Spinner } from "../components/ui";
import { TerminalView } from "./TerminalView";

interface OpenTab {
  id: string;
  title: string;
  pty: boolean;
}

const storeKey = (sandbox: string): string => `corral.terminals.${sandbox}`;

function loadTabs(sandbox: string): OpenTab[] {
  try {
    const v: unknown = JSON.parse(window.sessionStorage.getItem(storeKey(sandbox)) ?? "[]");
    return Array.isArray(v) ? (v as OpenTab[]).filter((t) => typeof t.id === "string") : [];
  } catch {
    return [];
  }
}

function saveTabs(sandbox: string, tabs: OpenTab[]): void {
  try {
    window.sessionStorage.setItem(storeKey(sandbox), JSON.stringify(tabs));
  } catch {
    // storage disabled: tabs last as long as the page
  }
}

export function processTitle(p: Process): string {
  if (p.label) return p.label;
  if (p.tag) return p.tag;
  return [p.command, ...(p.args ?? [])].join(" ").slice(0, 40);
}

export interface TerminalsProps {
  client: Client;
  sandboxID: string;
  /** attach opens this process (a job's own) when no tab is open yet. */
  attach?: string;
}

export function Terminals({ client, sandboxID, attach }: TerminalsProps) {
  const [tabs, setTabs] = useState<OpenTab[]>(() => loadTabs(sandboxID));
  const [active, setActive] = useState<string | null>(() => tabs[0]?.id ?? null);
  const [procs, setProcs] = useState<Process[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const refresh = useCallback(async (): Promise<Process[] | null> => {
    try {
      const list = await client.listProcesses(sandboxID);
      const ps = list.processes ?? [];
      setProcs(ps);
      setError(null);
      return ps;
    } catch (err) {
      setError(err);
      return null;
    }
  }, [client, sandboxID]);

  useEffect(() => {
    let cancelled = false;
    void refresh().then((ps) => {
      if (cancelled || !ps) return;
      // Forget tabs of processes that are gone; open the job's process at first.
      setTabs((cur) => {
        let next = cur.filter((t) => ps.some((p) => p.id === t.id));
        if (next.length === 0 && attach) {
          const p = ps.find((x) => x.id === attach || x.tag === attach);
          if (p) next = [{ id: p.id, title: processTitle(p), pty: p.pty }];
        }
        return next;
      });
    });
    return () => {
      cancelled = true;
    };
  }, [refresh, attach]);

  useEffect(() => saveTabs(sandboxID, tabs), [sandboxID, tabs]);
  // The active tab is always one of the open ones.
  useEffect(() => {
    if (active === null || !tabs.some((t) => t.id === active)) setActive(tabs[tabs.length - 1]?.id ?? null);
  }, [tabs, active]);

  const open = (p: Process): void => {
    setTabs((cur) => (cur.some((t) => t.id === p.id) ? cur : [...cur, { id: p.id, title: processTitle(p), pty: p.pty }]));
    setActive(p.id);
  };

  const newShell = async (): Promise<void> => {
    setBusy("Starting a shell…");
    setError(null);
    const n = tabs.length + 1;
    try {
      let p: Process;
      try {
        p = await client.spawn(sandboxID, { command: "bash", args: ["-l"], cwd: "/workspace", pty: { rows: 24, cols: 80 }, label: `Terminal ${n}`, env: { TERM: "xterm-256color" } });
      } catch (err) {
        // A template without bash (or without /workspace) still has sh.
        p = await client.spawn(sandboxID, { command: "/bin/sh", pty: { rows: 24, cols: 80 }, label: `Terminal ${n}`, env: { TERM: "xterm-256color" } }).catch(() => {
          throw err;
        });
      }
      open(p);
      void refresh();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  };

  const close = (id: string): void => {
    setTabs((cur) => cur.filter((t) => t.id !== id));
  };

  const kill = async (id: string): Promise<void> => {
    if (!window.confirm("Stop this process? Its output will be gone.")) return;
    try {
      await client.deleteProcess(sandboxID, id);
      close(id);
      void refresh();
    } catch (err) {
      setError(err);
    }
  };

  const attachable = useMemo(() => (procs ?? []).filter((p) => p.status === "running" && !tabs.some((t) => t.id === p.id)), [procs, tabs]);

  return (
    <div className="terminals">
      <div className="terminal-bar">
        <div className="terminal-tabs" role="tablist" aria-label="Terminals">
          {tabs.map((t) => (
            <div key={t.id} className={t.id === active ? "ttab ttab-active" : "ttab"}>
              <button type="button" role="tab" aria-selected={t.id === active} className="ttab-title" onClick={() => setActive(t.id)}>
                {t.title}
              </button>
              <button type="button" className="ttab-x" title="Close the tab (the process keeps running)" aria-label={`Close ${t.title}`} onClick={() => close(t.id)}>
                ×
              </button>
            </div>
          ))}
        </div>
        <div className="terminal-actions">
          <button type="button" className="btn btn-small btn-primary" onClick={() => void newShell()} disabled={busy !== null}>
            + New shell
          </button>
          {attachable.length > 0 && (
            <select
              className="input input-small"
              aria-label="Attach to a process"
              value=""
              onChange={(e) => {
                const p = attachable.find((x) => x.id === e.target.value);
                if (p) open(p);
              }}
              onFocus={() => void refresh()}
            >
              <option value="">Attach to…</option>
              {attachable.map((p) => (
                <option key={p.id} value={p.id}>
                  {processTitle(p)} (pid {p.pid})
                </option>
              ))}
            </select>
          )}
          {active && (
            <button type="button" className="btn btn-small btn-quiet" onClick={() => void kill(active)} title="Stop the process">
              Stop process
            </button>
          )}
        </div>
      </div>
      {busy && <Spinner label={busy} />}
      {error !== null && <ErrorNote error={error} doing="The terminal" onRetry={() => void refresh()} />}
      {tabs.length === 0 && !busy && (
        <div className="empty">
          {procs === null && error === null ? <Spinner label="Looking for processes…" /> : "No terminal open. Start a new shell, or attach to a running process."}
        </div>
      )}
      <div className="terminal-panes">
        {tabs.map((t) => (
          <TerminalView key={t.id} client={client} sandboxID={sandboxID} processID={t.id} pty={t.pty} active={t.id === active} onExit={() => void refresh()} />
        ))}
      </div>
    </div>
  );
}
