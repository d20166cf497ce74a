// The live job list: one page of GET /v1/jobs, kept current by the
// tenant's state-change stream (GET /v1/events) — no polling. The stream
// has no resume point, so each time it (re)connects the first page is
// fetched again, which covers whatever changed while it was down. A state
// change never moves a job backwards (an event older than the list it
// arrives after is ignored); a job the list does not have yet is fetched.

import { useCallback, useEffect, useRef, useState } from "react";
import type { Client } from "../api/client";
import type { StreamState } from "../api/sse";
import { isTerminal, type Job, type TenantEvent } from "../api/types";

const rank: Record<string, number> = { pending: 0, creating: 1, running: 2, completing: 3, completed: 4, failed: 4, cancelled: 4 };

/** applyState returns job after event, or job itself when the event is stale. */
export function applyState(job: Job, ev: TenantEvent): Job {
  if (job.status === ev.to) return job;
  if (isTerminal(job.status)) return job;
  if ((rank[ev.to] ?? 0) < (rank[job.status] ?? 0)) return job;
  const next: Job = { ...job, status: ev.to };
  if (ev.reason) next.status_reason = ev.reason;
  if (ev.time && ev.to === "running" && !job.started_at) next.started_at = ev.time;
  if (ev.time && isTerminal(ev.to) && !job.finished_at) next.finished_at = ev.time;
  return next;
}

/**
 * fresherRead is the later of two reads of one job: next, unless cur is
 * already further along. Reads can answer out of order (a slow first read
 * after a quick re-read), and an older one lacks what came with the later
 * state, such as the sandbox that came with "running".
 */
export function fresherRead(cur: Job | null, next: Job): Job {
  if (!cur || cur.id !== next.id) return next;
  if (isTerminal(cur.status) && !isTerminal(next.status)) return cur;
  return (rank[next.status] ?? 0) < (rank[cur.status] ?? 0) ? cur : next;
}

/** mergeJobs puts fresh (newer data) over cur, newest first. */
export function mergeJobs(cur: Job[], fresh: Job[]): Job[] {
  const byID = new Map(cur.map((j) => [j.id, j]));
  for (const j of fresh) byID.set(j.id, j);
  return [...byID.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1));
}

export interface LiveJobs {
  jobs: Job[] | null;
  error: unknown;
  stream: StreamState;
  next: string | null;
  loadingMore: boolean;
  loadMore: () => void;
}

export function useLiveJobs(client: Client, status: string): LiveJobs {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [stream, setStream] = useState<StreamState>({ kind: "connecting" });
  const [next, setNext] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const fetching = useRef(new Set<string>());
  const jobsRef = useRef<Job[] | null>(null);
  jobsRef.current = jobs;

  useEffect(() => {
    setJobs(null);
    setNext(null);
    setError(null);
    const ctl = new AbortController();
    const apiStatus = status === "active" || status === "" ? undefined : status;
    const fetchFirstPage = (): void => {
      client.listJobs(apiStatus ? { status: apiStatus, limit: 50 } : { limit: 50 }, ctl.signal).then(
        (list) => {
          if (ctl.signal.aborted) return;
          setJobs((cur) => mergeJobs(cur ?? [], list.jobs ?? []));
          setNext((n) => n ?? (list.next || null));
          setError(null);
        },
        (err: unknown) => {
          if (!ctl.signal.aborted) setError(err);
        },
      );
    };
    const fetchOne = (id: string): void => {
      if (fetching.current.has(id)) return;
      fetching.current.add(id);
      client.getJob(id, ctl.signal).then(
        (j) => {
          fetching.current.delete(id);
          if (!ctl.signal.aborted) setJobs((cur) => mergeJobs(cur ?? [], [j]));
        },
        () => fetching.current.delete(id),
      );
    };
    const stop = client.stream("/v1/events", {
      onOpen: fetchFirstPage,
      onState: setStream,
      onMessage: (msg) => {
        if (msg.event !== "job.state") return;
        let ev: TenantEvent;
        try {
          ev = JSON.parse(msg.data) as TenantEvent;
        } catch {
          return;
        }
        if (typeof ev.job_id !== "string" || typeof ev.to !== "string") return;
        const known = jobsRef.current?.some((j) => j.id === ev.job_id) ?? false;
        setJobs((cur) => {
          if (!cur) return cur;
          const i = cur.findIndex((j) => j.id === ev.job_id);
          const j = cur[i];
          if (!j) return cur;
          const updated = applyState(j, ev);
          if (updated === j) return cur;
          const copy = cur.slice();
          copy[i] = updated;
          return copy;
        });
        // A job this page does not show yet, or one that just ended (its
        // result is only in the job itself): one GET each.
        if (!known || isTerminal(ev.to)) fetchOne(ev.job_id);
      },
    });
    return () => {
      ctl.abort();
      stop();
    };
  }, [client, status]);

  const loadMore = useCallback(() => {
    if (!next || loadingMore) return;
    setLoadingMore(true);
    const apiStatus = status === "active" || status === "" ? undefined : status;
    client.listJobs({ ...(apiStatus ? { status: apiStatus } : {}), cursor: next, limit: 50 }).then(
      (list) => {
        setJobs((cur) => mergeJobs(cur ?? [], list.jobs ?? []));
        setNext(list.next || null);
        setLoadingMore(false);
      },
      (err: unknown) => {
        setError(err);
        setLoadingMore(false);
      },
    );
  }, [client, status, next, loadingMore]);

  return { jobs, error, stream, next, loadingMore, loadMore };
}
