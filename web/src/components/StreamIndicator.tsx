// A quiet dot saying whether a live stream is connected.

import type { StreamState } from "../api/sse";
import { describeError } from "../api/errors";

export function StreamIndicator({ state, endedLabel = "Ended" }: { state: StreamState; endedLabel?: string }) {
  let label: string;
  let title = "";
  switch (state.kind) {
    case "connecting":
      label = "Connecting…";
      break;
    case "open":
      label = "Live";
      break;
    case "reconnecting":
      label = `Reconnecting (attempt ${state.attempt})…`;
      title = describeError(state.error);
      break;
    case "ended":
      label = endedLabel;
      break;
    case "failed":
      label = "Not live";
      title = describeError(state.error);
      break;
  }
  return (
    <span className={`live live-${state.kind}`} title={title} role="status" data-testid="stream-state" data-state={state.kind}>
      <span className="live-dot" aria-hidden="true" />
      {label}
    </span>
  );
}
