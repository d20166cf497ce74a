// useJobEvents follows a job's event log live: it replays from the start,
// then streams; when the connection drops it resumes after the last seq
// it has (?after=), so nothing is lost or shown twice; it stops once the
// job's final state has arrived (the server ends the stream there too).

import { useEffect, useRef, useState } from "react";
import type { Client } from "../api/client";
import type { StreamState } from "../api/sse";
import { parseEvent, Timeline, type Item } from "./model";
import type { StateData } from "../api/events";

export interface JobEvents {
  items: Item[];
  count: number;
  lastSeq: number;
  finalState: StateData | null;
  /** lastState is the most recent job.state seen (the live status). */
  lastState: StateData | null;
  stream: StreamState;
}

export function useJobEvents(client: Client, jobID: string): JobEvents {
  const tl = useRef<Timeline | null>(null);
  const [, setVersion] = useState(0);
  const [stream, setStream] = useState<StreamState>({ kind: "connecting" });

  useEffect(() => {
    const timeline = new Timeline();
    tl.current = timeline;
    setVersion((v) => v + 1);
    // Renders are batched per animation frame: a replay of thousands of
    // events must not render thousands of times.
    let frame = 0;
    const schedule = (): void => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
      });
    };
    const stop = client.stream(() => client.jobEventsPath(jobID, timeline.lastSeq), {
      onMessage: (msg) => {
        const e = parseEvent(msg.data);
        if (!e || !timeline.add(e)) return;
        schedule();
      },
      onState: (s) => {
        setStream(s);
        schedule();
      },
      done: () => timeline.finalState !== null,
    });
    return () => {
      stop();
      cancelAnimationFrame(frame);
    };
  }, [client, jobID]);

  const t = tl.current;
  return {
    items: t ? t.items() : [],
    count: t ? t.count : 0,
    lastSeq: t ? t.lastSeq : 0,
    finalState: t ? t.finalState : null,
    lastState: t ? t.lastState : null,
    stream,
  };
}
