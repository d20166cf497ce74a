// A small history-API router: the UI has six pages, which does not
// justify a routing library. The server answers every client-side path
// with index.html (internal/webui), so deep links and reloads work.

import { useEffect, useState, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from "react";

const listeners = new Set<() => void>();

function subscribe(fn: () => void): () => void {
  listeners.add(fn);
  window.addEventListener("popstate", fn);
  return () => {
    listeners.delete(fn);
    window.removeEventListener("popstate", fn);
  };
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

/** navigate goes to path (with its query) without reloading the page. */
export function navigate(path: string, opts: { replace?: boolean } = {}): void {
  if (path === snapshot()) return;
  if (opts.replace) window.history.replaceState(null, "", path);
  else window.history.pushState(null, "", path);
  for (const fn of listeners) fn();
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

/** useLocation re-renders on navigation. */
export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, snapshot, snapshot);
  const u = new URL(href, "http://x");
  return { path: u.pathname, query: u.searchParams };
}

/** setQuery replaces one query parameter of the current location. */
export function setQuery(key: string, value: string | null): void {
  const u = new URL(window.location.href);
  if (value === null || value === "") u.searchParams.delete(key);
  else u.searchParams.set(key, value);
  navigate(u.pathname + u.search, { replace: true });
}

export type Route =
  | { page: "login"; next: string }
  | { page: "jobs" }
  | { page: "new-job" }
  | { page: "job"; id: string }
  | { page: "sandboxes" }
  | { page: "sandbox"; id: string }
  | { page: "not-found"; path: string };

/** match maps a path to a page. */
export function match(path: string, query: URLSearchParams): Route {
  const parts = path.split("/").filter(Boolean).map(safeDecode);
  const [a, b, ...rest] = parts;
  if (parts.length === 0) return { page: "jobs" };
  if (a === "login" && parts.length === 1) return { page: "login", next: query.get("next") ?? "/jobs" };
  if (a === "jobs" && parts.length === 1) return { page: "jobs" };
  if (a === "jobs" && b === "new" && rest.length === 0) return { page: "new-job" };
  if (a === "jobs" && b && rest.length === 0) return { page: "job", id: b };
  if (a === "sandboxes" && parts.length === 1) return { page: "sandboxes" };
  if (a === "sandboxes" && b && rest.length === 0) return { page: "sandbox", id: b };
  return { page: "not-found", path };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string };

/** Link is an <a> that navigates in place (ctrl/middle click still open a tab). */
export function Link({ to, onClick, ...rest }: LinkProps) {
  const handle = (e: MouseEvent<HTMLAnchorElement>): void => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={handle} {...rest} />;
}

/** useTitle sets the document title while the component is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · Corral` : "Corral";
  }, [title]);
}

/** useNow re-renders every interval ms, for relative times and timers. */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(t);
  }, [intervalMs]);
  return now;
}
