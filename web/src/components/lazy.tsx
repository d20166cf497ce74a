// The heavy parts load on first use: the terminal emulator (xterm.js)
// and the syntax highlighter are most of the UI's weight, and the job
// list needs neither.

import { lazy, Suspense, type ComponentProps } from "react";
import { Spinner } from "./ui";

const TerminalsLazy = lazy(() => import("../terminal/Terminals").then((m) => ({ default: m.Terminals })));
const FilesPanelLazy = lazy(() => import("./FilesPanel").then((m) => ({ default: m.FilesPanel })));
const DiffViewLazy = lazy(() => import("./DiffView").then((m) => ({ default: m.DiffView })));

export function Terminals(props: ComponentProps<typeof TerminalsLazy>) {
  return (
    <Suspense fallback={<Spinner label="Loading the terminal…" />}>
      <TerminalsLazy {...props} />
    </Suspense>
  );
}

export function FilesPanel(props: ComponentProps<typeof FilesPanelLazy>) {
  return (
    <Suspense fallback={<Spinner label="Loading the file browser…" />}>
      <FilesPanelLazy {...props} />
    </Suspense>
  );
}

export function DiffView(props: ComponentProps<typeof DiffViewLazy>) {
  return (
    <Suspense fallback={<Spinner label="Loading the diff viewer…" />}>
      <DiffViewLazy {...props} />
    </Suspense>
  );
}
