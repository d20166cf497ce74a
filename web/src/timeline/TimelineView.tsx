// The timeline rendered for people: state changes as quiet markers,
// messages as chat bubbles, thoughts muted, tool calls as collapsible
// cards holding their output, process output as a terminal-like block,
// errors in red, anything else as collapsible JSON.

import { memo, useEffect, useLayoutEffect, useRef, useState } from "react";
import { clockTime, fullTime, oneLine } from "../lib/format";
import { formatBytes } from "../lib/format";
import type { Item, OutputChunk } from "./model";
import type { ToolCallData } from "../api/events";
import { Icon } from "../components/Icon";

/** Output blocks show at most this much text at first; the rest on request. */
const outputShown = 512 << 10;

export function TimelineView({ items, live }: { items: Item[]; live: boolean }) {
  const end = useRef<HTMLDivElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const [follow, setFollow] = useState(true);

  // Follow the bottom while the reader is there; stop when they scroll up.
  useEffect(() => {
    const onScroll = (): void => {
      const el = document.scrollingElement ?? document.documentElement;
      setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 80);
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  useLayoutEffect(() => {
    if (follow && live) end.current?.scrollIntoView({ block: "end" });
  }, [items, follow, live]);

  return (
    <div className="timeline" ref={box} aria-live="off" data-testid="timeline">
      {items.map((it) => (
        <TimelineItem key={it.key} item={it} />
      ))}
      <div ref={end} />
      {!follow && live && (
        <button type="button" className="btn btn-small jump-latest" onClick={() => { setFollow(true); end.current?.scrollIntoView({ block: "end" }); }}>
          ↓ Latest
        </button>
      )}
    </div>
  );
}

const TimelineItem = memo(function TimelineItem({ item }: { item: Item }) {
  switch (item.kind) {
    case "state":
      return (
        <div className={`tl tl-state tl-state-${item.data.to}`} data-kind="state">
          <Time iso={item.time} />
          <span className="tl-state-dot" aria-hidden="true" />
          <span>
            {item.data.from ? `${item.data.from} → ` : ""}
            <strong>{item.data.to}</strong>
            {item.data.reason ? <span className="muted"> ({item.data.reason.replace(/_/g, " ")})</span> : null}
          </span>
        </div>
      );
    case "message":
      return (
        <div className={`tl tl-message tl-role-${item.data.role}`} data-kind="message">
          <div className="bubble">
            <div className="bubble-head">
              <span className="bubble-role">{roleName(item.data.role)}</span>
              <Time iso={item.time} />
            </div>
            <div className="bubble-text">{item.data.text}</div>
          </div>
        </div>
      );
    case "thought":
      return (
        <div className="tl tl-thought" data-kind="thought">
          <Time iso={item.time} />
          <div className="thought-text">{item.text}</div>
        </div>
      );
    case "tool":
      return <ToolItem item={item} />;
    case "output":
      return <OutputItem chunks={item.chunks} bytes={item.bytes} lost={item.lost} time={item.time} />;
    case "artifact":
      return (
        <div className="tl tl-artifact" data-kind="artifact">
          <Time iso={item.time} />
          <span>
            <Icon name="package" /> Artifact <strong>{item.name}</strong>
            {item.size !== undefined ? <span className="muted"> ({formatBytes(item.size)})</span> : null}
          </span>
        </div>
      );
    case "llm":
      return <LLMItem item={item} />;
    case "condensed":
      return (
        <details className="tl tl-other tl-quiet" data-kind="condensed">
          <summary>
            <Time iso={item.time} />
            <span className="muted">
              Context condensed: {item.data.dropped} messages summarised ({item.data.tokensBefore} → {item.data.tokensAfter} tokens)
            </span>
          </summary>
          <pre className="code-block">{item.data.summary}</pre>
        </details>
      );
    case "error":
      return (
        <div className="tl tl-error" role="alert" data-kind="error">
          <Time iso={item.time} />
          <span>{item.text}</span>
        </div>
      );
    case "other":
      return (
        <details className="tl tl-other" data-kind="other">
          <summary>
            <Time iso={item.time} />
            <span className="muted">{item.type === "raw" ? "agent event" : item.type}</span> <code>{oneLine(JSON.stringify(item.data) ?? "", 100)}</code>
          </summary>
          <pre className="code-block">{JSON.stringify(item.data, null, 2)}</pre>
        </details>
      );
  }
});

function roleName(role: string): string {
  return role === "user" ? "You" : role === "agent" ? "Agent" : role === "system" ? "System" : role;
}

function Time({ iso }: { iso: string }) {
  return (
    <time className="tl-time" dateTime={iso} title={fullTime(iso)}>
      {clockTime(iso)}
    </time>
  );
}

/** inputSummary is the one line that says what a tool call does. */
export function inputSummary(call: ToolCallData): string {
  const inp = call.input;
  if (typeof inp === "string") return oneLine(inp);
  if (inp && typeof inp === "object") {
    const o = inp as Record<string, unknown>;
    for (const k of ["command", "cmd", "path", "file_path", "query", "pattern", "text", "url", "summary"]) {
      const v = o[k];
      if (typeof v === "string") return oneLine(k === "command" || k === "cmd" ? v : `${k}: ${v}`);
    }
    return oneLine(JSON.stringify(inp));
  }
  return "";
}

function LLMItem({ item }: { item: Extract<Item, { kind: "llm" }> }) {
  const d = item.response ?? item.request;
  if (!d) return null;
  const r = item.response;
  const parts = [d.purpose === "condense" ? "summarising the context" : `step ${d.step}`, d.model];
  if (r?.inputTokens !== undefined) parts.push(`${r.inputTokens} → ${r.outputTokens ?? 0} tokens`);
  else if (item.request?.estTokens !== undefined) parts.push(`~${item.request.estTokens} tokens in`);
  if (r?.durationMS !== undefined) parts.push(`${(r.durationMS / 1000).toFixed(1)} s`);
  return (
    <div className="tl tl-llm" data-kind="llm">
      <Time iso={item.time} />
      <span className="muted small">
        {r ? "Model answered" : "Asking the model…"} · {parts.filter(Boolean).join(" · ")}
      </span>
    </div>
  );
}

function ToolItem({ item }: { item: Extract<Item, { kind: "tool" }> }) {
  const { call, result } = item;
  const pending = call !== null && result === null;
  const failed = result !== null && (result.is_error || (result.exit_code !== null && result.exit_code !== 0));
  return (
    <details className={`tl tl-tool${failed ? " tl-tool-failed" : ""}`} data-kind="tool">
      <summary>
        <Time iso={item.time} />
        <span className="tool-name">{call?.tool ?? "tool result"}</span>
        <code className="tool-input">{call ? inputSummary(call) : ""}</code>
        <span className="tool-status">
          {pending ? (
            <span className="muted">running…</span>
          ) : result?.is_error ? (
            <span className="bad">error</span>
          ) : result?.exit_code !== null && result?.exit_code !== undefined ? (
            <span className={result.exit_code === 0 ? "ok" : "bad"}>exit {result.exit_code}</span>
          ) : (
            <span className="ok">done</span>
          )}
        </span>
      </summary>
      {call && (
        <div className="tool-section">
          <div className="tool-label">Input</div>
          <pre className="code-block">{typeof call.input === "string" ? call.input : JSON.stringify(call.input, null, 2)}</pre>
        </div>
      )}
      {result && (
        <div className="tool-section">
          <div className="tool-label">Output</div>
          <pre className={`code-block${result.is_error ? " code-error" : ""}`}>{result.output || <span className="muted">(no output)</span>}</pre>
        </div>
      )}
    </details>
  );
}

function OutputItem({ chunks, bytes, lost, time }: { chunks: OutputChunk[]; bytes: number; lost: number; time: string }) {
  const [all, setAll] = useState(false);
  const pre = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  // New output keeps the block scrolled to its end, unless the reader
  // scrolled up in it.
  useLayoutEffect(() => {
    const el = pre.current;
    if (el && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [chunks]);
  let total = 0;
  for (const c of chunks) total += c.text.length;
  let skip = all ? 0 : Math.max(0, total - outputShown);
  const shown: OutputChunk[] = [];
  for (const c of chunks) {
    if (skip >= c.text.length) {
      skip -= c.text.length;
      continue;
    }
    shown.push(skip > 0 ? { stream: c.stream, text: c.text.slice(skip) } : c);
    skip = 0;
  }
  return (
    <div className="tl tl-output" data-kind="output">
      <div className="tl-output-head">
        <Time iso={time} />
        <span className="muted">
          Output · {formatBytes(bytes)}
          {lost > 0 ? ` · ${formatBytes(lost)} missing` : ""}
        </span>
      </div>
      {total > outputShown && !all && (
        <button type="button" className="btn btn-small" onClick={() => setAll(true)}>
          Show the first {formatBytes(total - outputShown)} too
        </button>
      )}
      <pre
        className="output"
        data-testid="output"
        ref={pre}
        onScroll={(e) => {
          const el = e.currentTarget;
          atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {shown.map((c, i) => (
          <span key={i} className={`out-${c.stream}`}>
            {stripANSI(c.text)}
          </span>
        ))}
      </pre>
    </div>
  );
}

/** stripANSI removes terminal escape sequences (colours, cursor moves) a plain block cannot show. */
export function stripANSI(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.includes("\x1b") ? s.replace(/\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g, "") : s;
}
