// useJobEvents follows a job's event log live: it replays from the start,
// then streams; when the connection drops it resumes after the last seq
// it has (?after=), so nothing is lost or shown twice; it stops once the
// job's final state has arrived (the server ends the stream there too).

import { useEffect, useState } from "react";
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

type Snapshot = Omit<JobEvents, "stream">;

const empty: Snapshot = { items: [], count: 0, lastSeq: 0, finalState: null, lastState: null };

function snapshot(t: Timeline): Snapshot {
  return { items: t.items(), count: t.count, lastSeq: t.lastSeq, finalState: t.finalState, lastState: t.lastState };
}

export function useJobEvents(client: Client, jobID: string): JobEvents {
  // A render reads only this state, never the timeline itself: the timeline
  // changes outside React, and a render that saw it change without a state
  // change of its own could be thrown away by React with its effects.
  const [snap, setSnap] = useState<Snapshot>(empty);
  const [stream, setStream] = useState<StreamState>({ kind: "connecting" });

  useEffect(() => {
    const timeline = new Timeline();
    setSnap(empty);
    // Renders are batched per animation frame: a replay of thousands of
    // events must not render thousands of times.
    let frame = 0;
    const schedule = (): void => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setSnap(snapshot(timeline));
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

  return { ...snap, stream };
}
