// Code with syntax colour and line numbers.

import { useMemo } from "react";
import { highlight, languageOf } from "../lib/highlight";

export function CodeView({ text, filename, language }: { text: string; filename?: string; language?: string }) {
  const lang = language ?? languageOf(filename ?? "");
  const html = useMemo(() => highlight(text, lang), [text, lang]);
  const lines = useMemo(() => {
    let n = 1;
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
    if (text.endsWith("\n")) n--;
    return Math.max(n, 1);
  }, [text]);
  return (
    <div className="codeview" data-language={lang}>
      <pre className="codeview-gutter" aria-hidden="true">
        {Array.from({ length: lines }, (_, i) => i + 1).join("\n")}
      </pre>
      {/* highlight() escapes the text: the HTML is its own markup only */}
      <pre className="codeview-code hljs">
        <code dangerouslySetInnerHTML={{ __html: html }} />
      </pre>
    </div>
  );
}
