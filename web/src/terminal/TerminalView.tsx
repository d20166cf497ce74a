// One terminal: xterm.js attached to a sandbox process over the proxied
// connect WebSocket (connection.ts). The terminal follows the size of its
// box (fit addon + ResizeObserver) and tells the process; links in the
// output are clickable; a dropped connection is redialed from the last
// offset, so the screen neither loses nor repeats output.

import { useEffect, useRef, useState } from "react";
import { Terminal, type ITheme } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import { WebLinksAddon } from "@xterm/addon-web-links";
import "@xterm/xterm/css/xterm.css";
import type { Client } from "../api/client";
import { ApiError } from "../api/errors";
import { TerminalConnection, type ConnectionState, type ProbeResult } from "./connection";

export interface TerminalViewProps {
  client: Client;
  sandboxID: string;
  processID: string;
  pty: boolean;
  active: boolean;
  onExit?: (code: number | null, signal: string | null) => void;
}

/** The element holding a terminal carries corralText() (the whole buffer as text) for tests and copying. */
export type TerminalHost = HTMLDivElement & { corralText?: () => string };

function theme(): ITheme {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string): string => css.getPropertyValue(name).trim() || fallback;
  return {
    background: v("--term-bg", "#1e1e1e"),
    foreground: v("--term-fg", "#e6e6e6"),
    cursor: v("--term-cursor", "#e6e6e6"),
    selectionBackground: v("--term-selection", "#44475a"),
  };
}

export function TerminalView({ client, sandboxID, processID, pty, active, onExit }: TerminalViewProps) {
  const host = useRef<TerminalHost>(null);
  const fitRef = useRef<FitAddon | null>(null);
  const termRef = useRef<Terminal | null>(null);
  const [state, setState] = useState<ConnectionState>("connecting");
  const [notice, setNotice] = useState<string | null>(null);
  const onExitRef = useRef(onExit);
  onExitRef.current = onExit;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const term = new Terminal({
      cursorBlink: true,
      convertEol: !pty, // plain pipes send bare \n
      fontFamily: 'ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace',
      fontSize: 13,
      scrollback: 10_000,
      theme: theme(),
      allowProposedApi: false,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.loadAddon(new WebLinksAddon((_e, uri) => window.open(uri, "_blank", "noopener,noreferrer")));
    term.open(el);
    termRef.current = term;
    fitRef.current = fit;
    el.corralText = () => {
      const b = term.buffer.active;
      const lines: string[] = [];
      for (let i = 0; i < b.length; i++) lines.push(b.getLine(i)?.translateToString(true) ?? "");
      return lines.join("\n");
    };

    const probe = async (): Promise<ProbeResult> => {
      try {
        await client.getProcess(sandboxID, processID);
        return "retry";
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return "unauthorized";
        if (err instanceof ApiError && err.status === 404) return "gone";
        return "retry";
      }
    };
    const conn = new TerminalConnection({
      url: (offset) => client.connectURL(sandboxID, processID, offset),
      pty,
      probe,
      onOutput: (data) => term.write(data),
      onTruncated: (from, initial) =>
        setNotice(initial ? `Older output (before byte ${from}) is no longer kept by the sandbox.` : `Output was lost while disconnected: resumed at byte ${from}.`),
      onExit: (code, sig) => {
        term.write(`\r\n\x1b[2m[process exited${sig ? ` by ${sig}` : code !== null ? ` with code ${code}` : ""}]\x1b[0m\r\n`);
        onExitRef.current?.(code, sig);
      },
      onRefused: (detail) => setNotice(`The sandbox refused that: ${detail}`),
      onState: (s, detail) => {
        setState(s);
        if (s === "gone") setNotice(detail ?? "The process no longer exists.");
        if (s === "failed") setNotice(detail ?? "The terminal connection failed.");
      },
    });
    const enc = new TextEncoder();
    const d1 = term.onData((d) => conn.send(enc.encode(d)));
    const d2 = term.onBinary((d) => {
      const bytes = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) bytes[i] = d.charCodeAt(i) & 0xff;
      conn.send(bytes);
    });
    const d3 = term.onResize(({ rows, cols }) => conn.resize(rows, cols));

    let frame = 0;
    const refit = (): void => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        if (el.offsetWidth > 0 && el.offsetHeight > 0) {
          try {
            fit.fit();
          } catch {
            // not laid out yet
          }
          conn.resize(term.rows, term.cols);
        }
      });
    };
    const ro = new ResizeObserver(refit);
    ro.observe(el);
    refit();
    const onTheme = (): void => {
      term.options.theme = theme();
    };
    window.addEventListener("corral-theme", onTheme);

    return () => {
      cancelAnimationFrame(frame);
      ro.disconnect();
      window.removeEventListener("corral-theme", onTheme);
      d1.dispose();
      d2.dispose();
      d3.dispose();
      conn.close();
      term.dispose();
      termRef.current = null;
      fitRef.current = null;
    };
  }, [client, sandboxID, processID, pty]);

  useEffect(() => {
    if (!active) return;
    const t = termRef.current;
    const fit = fitRef.current;
    if (!t || !fit) return;
    requestAnimationFrame(() => {
      try {
        fit.fit();
      } catch {
        // hidden
      }
      t.focus();
    });
  }, [active]);

  return (
    <div className="terminal-wrap" hidden={!active}>
      <div className="terminal-status" data-state={state}>
        <span className={`conn conn-${state}`}>{stateLabel(state)}</span>
        {notice && (
          <span className="terminal-notice">
            {notice}{" "}
            <button type="button" className="link-button" onClick={() => setNotice(null)} aria-label="Dismiss">
              ×
            </button>
          </span>
        )}
      </div>
      <div className="terminal" ref={host} data-testid="terminal" data-process={processID} />
    </div>
  );
}

function stateLabel(s: ConnectionState): string {
  switch (s) {
    case "connecting":
      return "Connecting…";
    case "open":
      return "Connected";
    case "reconnecting":
      return "Reconnecting…";
    case "exited":
      return "Process exited";
    case "gone":
      return "Process gone";
    case "failed":
      return "Disconnected";
    case "closed":
      return "Closed";
  }
}
