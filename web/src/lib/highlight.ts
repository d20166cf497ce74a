// Syntax colour with highlight.js core and the languages an agent's
// workspace usually holds: a few kilobytes each instead of the ~190
// languages of the full bundle. highlight.js escapes the source, so its
// HTML output is safe to insert.

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import plaintext from "highlight.js/lib/languages/plaintext";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, c, cpp, css, diff, dockerfile, go, ini, java, javascript, json, makefile, markdown, plaintext, python, rust, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);

const byExtension: Record<string, string> = {
  sh: "bash", bash: "bash", zsh: "bash",
  c: "c", h: "c",
  cc: "cpp", cpp: "cpp", cxx: "cpp", hpp: "cpp",
  css: "css", scss: "css",
  diff: "diff", patch: "diff",
  go: "go", mod: "go",
  ini: "ini", toml: "ini", cfg: "ini", conf: "ini",
  java: "java", kt: "java",
  js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript",
  json: "json", jsonl: "json",
  md: "markdown", markdown: "markdown",
  py: "python",
  rs: "rust",
  sql: "sql",
  ts: "typescript", tsx: "typescript", mts: "typescript",
  html: "xml", htm: "xml", xml: "xml", svg: "xml", vue: "xml",
  yml: "yaml", yaml: "yaml",
};

const byName: Record<string, string> = {
  dockerfile: "dockerfile", containerfile: "dockerfile", makefile: "makefile", gnumakefile: "makefile",
};

/** languageOf guesses a file's language from its name ("plaintext" if unknown). */
export function languageOf(filename: string): string {
  const base = (filename.split("/").pop() ?? "").toLowerCase();
  const named = byName[base];
  if (named) return named;
  const dot = base.lastIndexOf(".");
  return (dot >= 0 && byExtension[base.slice(dot + 1)]) || "plaintext";
}

/** Above this size text is shown without colour: highlighting would stall the page. */
export const maxHighlight = 256 << 10;

/** highlight returns safe HTML for code in language. */
export function highlight(code: string, language: string): string {
  if (code.length > maxHighlight || !hljs.getLanguage(language)) return escapeHTML(code);
  return hljs.highlight(code, { language, ignoreIllegals: true }).value;
}

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch);
}
