// The Desktop tab: the sandbox's noVNC page (sandboxd /v1/desktop/novnc/,
// proxied as /v1/sandboxes/{id}/desktop/novnc/) in a frame. An iframe
// cannot send a header, so the token goes as ?access_token=; the control
// plane strips it before forwarding, and sandboxd's noVNC shim carries it
// on to noVNC's files and VNC WebSocket. The tab exists only when GET
// .../desktop/status answers 200 (the sandbox's template has a desktop);
// a desktop that is not running yet can be started from here.

import { useEffect, useState } from "react";
import type { Client } from "../api/client";
import type { DesktopStatus } from "../api/types";
import { ErrorNote, Spinner } from "./ui";


/** useDesktop is the sandbox's desktop status, or null when it has none. */
export function useDesktop(client: Client, sandboxID: string | null | undefined): DesktopStatus | null {
  const [status, setStatus] = useState<DesktopStatus | null>(null);
  useEffect(() => {
    setStatus(null);
    if (!sandboxID) return;
    const ctl = new AbortController();
    void client.desktopStatus(sandboxID, ctl.signal).then((s) => {
      if (!ctl.signal.aborted) setStatus(s);
    });
    return () => ctl.abort();
  }, [client, sandboxID]);
  return status;
}

export function desktopURL(client: Client, sandboxID: string): string {
  const q = new URLSearchParams({ autoconnect: "true", resize: "scale", access_token: client.token });
  return client.url(`${client.sandboxPath(sandboxID, "desktop/novnc/vnc.html")}?${q.toString()}`);
}

export function DesktopPanel({ client, sandboxID, initial }: { client: Client; sandboxID: string; initial: DesktopStatus }) {
  const [status, setStatus] = useState(initial);
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const start = async (): Promise<void> => {
    setStarting(true);
    setError(null);
    try {
      setStatus(await client.startDesktop(sandboxID));
    } catch (err) {
      setError(err);
    } finally {
      setStarting(false);
    }
  };

  if (!status.running || !status.vnc) {
    return (
      <div className="empty">
        <p>This sandbox has a desktop, but it is not running.</p>
        <ErrorNote error={error} doing="Starting the desktop" />
        {starting ? (
          <Spinner label="Starting the desktop…" />
        ) : (
          <button type="button" className="btn btn-primary" onClick={() => void start()}>
            Start the desktop
          </button>
        )}
      </div>
    );
  }
  return (
    <div className="desktop">
      <iframe className="desktop-frame" title="Sandbox desktop" src={desktopURL(client, sandboxID)} referrerPolicy="no-referrer" />
    </div>
  );
}
