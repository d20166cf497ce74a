// useLoad runs an async load when its deps change, aborting the previous
// one, and exposes the result, the error and a reload.

import { useCallback, useEffect, useRef, useState } from "react";
import { isAbort } from "../api/errors";

export interface Loaded<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
  reload: () => void;
  set: (v: T) => void;
}

export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const ctl = new AbortController();
    setLoading(true);
    setError(null);
    loadRef.current(ctl.signal).then(
      (v) => {
        if (ctl.signal.aborted) return;
        setData(v);
        setLoading(false);
      },
      (err: unknown) => {
        if (ctl.signal.aborted || isAbort(err)) return;
        setError(err);
        setLoading(false);
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload, set: setData };
}
