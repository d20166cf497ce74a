// The application shell: login gate, header with navigation, theme and
// logout, and the page for the current route.

import { useCallback, useEffect, useMemo, useState } from "react";
import { Client } from "../api/client";
import { clearToken, loadToken, saveToken } from "../api/auth";
import { applyTheme, loadTheme, nextTheme, type ThemeChoice } from "../lib/theme";
import { Link, match, navigate, useLocation, useTitle } from "../lib/router";
import { JobPage } from "../pages/JobPage";
import { JobsPage } from "../pages/JobsPage";
import { LoginPage } from "../pages/LoginPage";
import { NewJobPage } from "../pages/NewJobPage";
import { SandboxPage } from "../pages/SandboxPage";
import { SandboxesPage } from "../pages/SandboxesPage";
import { SessionContext, type Session } from "./session";

export function App() {
  const [token, setToken] = useState<string | null>(loadToken);
  const [notice, setNotice] = useState<string | null>(null);
  const [theme, setTheme] = useState<ThemeChoice>(loadTheme);
  const loc = useLocation();
  const route = match(loc.path, loc.query);

  useEffect(() => applyTheme(theme), [theme]);
  useEffect(() => {
    if (theme !== "system") return;
    const mq = window.matchMedia?.("(prefers-color-scheme: dark)");
    const onChange = (): void => applyTheme("system");
    mq?.addEventListener("change", onChange);
    return () => mq?.removeEventListener("change", onChange);
  }, [theme]);

  const logout = useCallback((why?: string) => {
    clearToken();
    setToken(null);
    setNotice(why ?? null);
    const here = window.location.pathname + window.location.search;
    navigate(here.startsWith("/login") ? here : `/login?next=${encodeURIComponent(here)}`, { replace: true });
  }, []);

  const session: Session | null = useMemo(
    () =>
      token
        ? {
            client: new Client(token, { onUnauthorized: () => logout("Your token was not accepted (it may have been revoked). Please log in again.") }),
            logout,
          }
        : null,
    [token, logout],
  );

  if (!session) {
    const next = route.page === "login" ? route.next : loc.path + (loc.query.toString() ? `?${loc.query.toString()}` : "");
    return (
      <LoginPage
        notice={notice}
        onLogin={(t, remember) => {
          saveToken(t, remember);
          setToken(t);
          setNotice(null);
          navigate(safeNext(next), { replace: true });
        }}
      />
    );
  }
  if (route.page === "login") return <Redirect to={safeNext(route.next)} />;

  return (
    <SessionContext.Provider value={session}>
      <Header theme={theme} onTheme={() => setTheme(nextTheme(theme))} onLogout={() => logout()} current={route.page} />
      {route.page === "jobs" && <JobsPage />}
      {route.page === "new-job" && <NewJobPage />}
      {route.page === "job" && <JobPage key={route.id} id={route.id} />}
      {route.page === "sandboxes" && <SandboxesPage />}
      {route.page === "sandbox" && <SandboxPage key={route.id} id={route.id} />}
      {route.page === "not-found" && <NotFound path={route.path} />}
    </SessionContext.Provider>
  );
}

/** safeNext keeps a post-login redirect on this site. */
export function safeNext(next: string): string {
  return next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login") ? next : "/jobs";
}

function Header({ theme, onTheme, onLogout, current }: { theme: ThemeChoice; onTheme: () => void; onLogout: () => void; current: string }) {
  const themeLabel = theme === "system" ? "Theme: system" : theme === "light" ? "Theme: light" : "Theme: dark";
  const icon = theme === "system" ? "◐" : theme === "light" ? "☀" : "☾";
  return (
    <header className="topbar">
      <Link to="/jobs" className="brand" aria-label="Corral">
        <span className="brand-mark" aria-hidden="true">◆</span> <span className="brand-text">Corral</span>
      </Link>
      <nav className="nav" aria-label="Main">
        <Link to="/jobs" className={current === "jobs" || current === "job" || current === "new-job" ? "nav-link nav-active" : "nav-link"}>
          Jobs
        </Link>
        <Link to="/sandboxes" className={current === "sandboxes" || current === "sandbox" ? "nav-link nav-active" : "nav-link"}>
          Sandboxes
        </Link>
      </nav>
      <div className="topbar-actions">
        <button type="button" className="btn btn-quiet btn-icon" onClick={onTheme} title={themeLabel} aria-label={themeLabel}>
          {icon}
        </button>
        <button type="button" className="btn btn-quiet" onClick={onLogout}>
          Log out
        </button>
      </div>
    </header>
  );
}

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function NotFound({ path }: { path: string }) {
  useTitle("Not found");
  return (
    <main className="page">
      <h1>Not found</h1>
      <p>
        There is no page at <code>{path}</code>. <Link to="/jobs">Go to the jobs</Link>.
      </p>
    </main>
  );
}
