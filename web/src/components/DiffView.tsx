// A unified diff rendered for reading: one section per file, added and
// removed lines tinted, code coloured by the file's language.

import { useMemo } from "react";
import { escapeHTML, highlight, languageOf } from "../lib/highlight";

interface FileDiff {
  name: string;
  header: string[];
  lines: string[];
}

/** splitDiff cuts a unified diff into files (by their diff --git or --- lines). */
export function splitDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  let cur: FileDiff | null = null;
  const lines = diff.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const git = /^diff --git a\/(.+?) b\/(.+)$/.exec(line);
    // A plain diff (no git header) starts a file with ---/+++ lines.
    const plain = line.startsWith("--- ") && (lines[i + 1] ?? "").startsWith("+++ ") && (!cur || cur.lines.length > 0);
    if (git || plain) {
      cur = { name: git?.[2] ?? "", header: [line], lines: [] };
      files.push(cur);
      if (git) continue;
    }
    if (!cur) {
      cur = { name: "", header: [], lines: [] };
      files.push(cur);
    }
    if (cur.lines.length === 0 && /^(index |new file|deleted file|similarity|rename |old mode|new mode|--- |\+\+\+ |Binary files)/.test(line)) {
      if (cur.header[cur.header.length - 1] !== line) cur.header.push(line);
      const plus = /^\+\+\+ (?:b\/)?(.+)$/.exec(line);
      if (plus?.[1] && plus[1] !== "/dev/null") cur.name = plus[1];
      const minus = /^--- (?:a\/)?(.+)$/.exec(line);
      if (!cur.name && minus?.[1] && minus[1] !== "/dev/null") cur.name = minus[1];
      continue;
    }
    cur.lines.push(line);
  }
  return files.filter((f) => f.header.length > 0 || f.lines.length > 0);
}

function lineClass(line: string): string {
  if (line.startsWith("@@")) return "diff-hunk";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  if (line.startsWith("\\")) return "diff-meta";
  return "diff-ctx";
}

function FileSection({ file }: { file: FileDiff }) {
  const lang = languageOf(file.name);
  const rendered = useMemo(
    () =>
      file.lines.map((line) => {
        const cls = lineClass(line);
        if (cls === "diff-hunk" || cls === "diff-meta") return { cls, html: escapeHTML(line) };
        const body = line.slice(1);
        return { cls, html: escapeHTML(line.charAt(0) || " ") + highlight(body, lang) };
      }),
    [file, lang],
  );
  let added = 0;
  let removed = 0;
  for (const l of file.lines) {
    if (l.startsWith("+")) added++;
    else if (l.startsWith("-")) removed++;
  }
  return (
    <section className="diff-file">
      <header className="diff-file-head">
        <span className="diff-file-name">{file.name || "(unnamed)"}</span>
        <span className="ok">+{added}</span> <span className="bad">−{removed}</span>
      </header>
      <pre className="diff-body hljs">
        {rendered.map((l, i) => (
          <div key={i} className={`diff-line ${l.cls}`} dangerouslySetInnerHTML={{ __html: l.html || " " }} />
        ))}
      </pre>
    </section>
  );
}

export function DiffView({ diff }: { diff: string }) {
  const files = useMemo(() => splitDiff(diff), [diff]);
  if (files.length === 0) return <div className="empty">No changes.</div>;
  return (
    <div className="diff" data-testid="diff">
      {files.map((f, i) => (
        <FileSection key={`${f.name}-${i}`} file={f} />
      ))}
    </div>
  );
}
