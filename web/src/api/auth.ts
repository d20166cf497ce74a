// Where the token lives in the browser.
//
// By default it is kept in sessionStorage: it survives reloads of the tab
// but not closing it, and other tabs and sites cannot read it. "Remember
// me" keeps it in localStorage instead, for this browser profile only.
// Either way it is readable by this origin's scripts, so the server sends
// a strict Content-Security-Policy (no inline or foreign scripts) that
// keeps injected code from running. It is never put in a cookie (the API
// authenticates by header only, so there is nothing a cross-site request
// could ride on) and never in a URL, except the WebSocket and iframe
// URLs that browsers cannot give a header (?access_token=), which the
// server strips before logging or forwarding.

const key = "corral.token";

function store(kind: "session" | "local"): Storage | null {
  try {
    return kind === "session" ? window.sessionStorage : window.localStorage;
  } catch {
    return null; // storage disabled (privacy mode): the token lives in memory only
  }
}

let memory: string | null = null;

/** loadToken returns the saved token, or null. */
export function loadToken(): string | null {
  const session = store("session");
  const local = store("local");
  if (!session && !local) return memory;
  return session?.getItem(key) ?? local?.getItem(key) ?? null;
}

/** saveToken keeps token for this tab, or in this browser if remember. */
export function saveToken(token: string, remember: boolean): void {
  clearToken();
  memory = token;
  (remember ? store("local") : store("session"))?.setItem(key, token);
}

/** clearToken forgets the token everywhere (logout). */
export function clearToken(): void {
  memory = null;
  store("session")?.removeItem(key);
  store("local")?.removeItem(key);
}

/** looksLikeToken is a first check before asking the server. */
export function looksLikeToken(s: string): boolean {
  return /^\S{8,512}$/.test(s);
}
