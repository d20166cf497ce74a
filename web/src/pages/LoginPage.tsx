// Log in with a token: it is checked against the server before it is
// kept (see api/auth.ts for where and why).

import { useState, type FormEvent } from "react";
import { Client } from "../api/client";
import { looksLikeToken } from "../api/auth";
import { ErrorNote, Note } from "../components/ui";
import { useTitle } from "../lib/router";

export function LoginPage({ onLogin, notice }: { onLogin: (token: string, remember: boolean) => void; notice: string | null }) {
  useTitle("Log in");
  const [token, setToken] = useState("");
  const [remember, setRemember] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [checking, setChecking] = useState(false);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    const t = token.trim();
    if (!looksLikeToken(t)) {
      setError(new Error("That does not look like a token: paste the crl_… token `corral up` printed, or one from `corral token create`."));
      return;
    }
    setChecking(true);
    setError(null);
    try {
      await new Client(t).listJobs({ limit: 1 });
      onLogin(t, remember);
    } catch (err) {
      setError(err);
    } finally {
      setChecking(false);
    }
  };

  return (
    <main className="login">
      <form className="card login-card" onSubmit={(e) => void submit(e)}>
        <h1 className="login-title">
          <span className="brand-mark" aria-hidden="true">◆</span> Corral
        </h1>
        <p className="muted">AI coding agents in isolated sandboxes.</p>
        {notice && <Note kind="warn">{notice}</Note>}
        <div className="field">
          <label className="field-label" htmlFor="token">
            Access token
          </label>
          <input
            id="token"
            className="input"
            type="password"
            name="token"
            autoComplete="current-password"
            autoFocus
            placeholder="crl_…"
            aria-describedby="token-help"
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
          <span className="field-help" id="token-help">
            Printed by <code>corral up</code> on first start and kept in <code>~/.config/corral/config.json</code>; more with <code>corral token create</code>.
          </span>
        </div>
        <label className="check">
          <input type="checkbox" checked={remember} onChange={(e) => setRemember(e.target.checked)} /> Remember me on this computer
        </label>
        <ErrorNote error={error} doing="Logging in" />
        <button type="submit" className="btn btn-primary btn-wide" disabled={checking || token.trim() === ""}>
          {checking ? "Checking…" : "Log in"}
        </button>
      </form>
    </main>
  );
}
