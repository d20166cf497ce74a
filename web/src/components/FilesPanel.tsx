// The Files tab: browse a sandbox's filesystem (from /workspace), view a
// file with syntax colour, upload (button or drop) and download files and
// folders, make folders, delete. Uploads and downloads show progress.

import { useCallback, useRef, useState, type DragEvent } from "react";
import type { Client } from "../api/client";
import { describeError } from "../api/errors";
import type { FileInfo } from "../api/types";
import { baseName, saveBlob } from "../lib/download";
import { formatBytes, relativeTime } from "../lib/format";
import { useLoad } from "../lib/useLoad";
import { CodeView } from "./CodeView";
import { Icon } from "./Icon";
import { ErrorNote, ProgressBar, Spinner } from "./ui";

/** Files larger than this are offered for download instead of shown. */
const maxView = 2 << 20;

interface Transfer {
  id: number;
  label: string;
  loaded: number;
  total: number | null;
}

export function joinPath(dir: string, name: string): string {
  return (dir.endsWith("/") ? dir : dir + "/") + name;
}

export function parentOf(path: string): string {
  const parts = path.split("/").filter(Boolean);
  parts.pop();
  return "/" + parts.join("/");
}

/** looksBinary: a NUL in the first 8 KiB, as git decides. */
export function looksBinary(data: Uint8Array): boolean {
  const n = Math.min(data.length, 8192);
  for (let i = 0; i < n; i++) if (data[i] === 0) return true;
  return false;
}

export function FilesPanel({ client, sandboxID, root = "/workspace" }: { client: Client; sandboxID: string; root?: string }) {
  const [dir, setDir] = useState(root);
  const [file, setFile] = useState<FileInfo | null>(null);
  const [transfers, setTransfers] = useState<Transfer[]>([]);
  const [actionError, setActionError] = useState<unknown>(null);
  const [dragging, setDragging] = useState(false);
  const nextID = useRef(1);
  const input = useRef<HTMLInputElement>(null);

  const listing = useLoad((signal) => client.listFiles(sandboxID, dir, signal), [client, sandboxID, dir]);

  const track = useCallback((label: string) => {
    const id = nextID.current++;
    setTransfers((t) => [...t, { id, label, loaded: 0, total: null }]);
    return {
      progress: (loaded: number, total: number | null) => setTransfers((t) => t.map((x) => (x.id === id ? { ...x, loaded, total } : x))),
      done: () => setTransfers((t) => t.filter((x) => x.id !== id)),
    };
  }, []);

  const upload = async (files: FileList | File[]): Promise<void> => {
    setActionError(null);
    for (const f of Array.from(files)) {
      const t = track(`Uploading ${f.name}`);
      try {
        await client.writeFile(sandboxID, joinPath(dir, f.name), f, t.progress);
      } catch (err) {
        setActionError(new Error(describeError(err, `Uploading ${f.name}`)));
      } finally {
        t.done();
      }
    }
    listing.reload();
  };

  const download = async (fi: FileInfo): Promise<void> => {
    setActionError(null);
    const isDir = fi.type === "dir";
    const t = track(`Downloading ${fi.name}${isDir ? " (zip)" : ""}`);
    try {
      const route = isDir ? "fs/archive" : "fs/file";
      const query = isDir ? { path: fi.path, format: "zip" } : { path: fi.path };
      const { blob } = await client.download(client.sandboxPath(sandboxID, route), { query, onProgress: t.progress, timeoutMs: 120_000 });
      saveBlob(blob, isDir ? `${baseName(fi.path) || "root"}.zip` : baseName(fi.path));
    } catch (err) {
      setActionError(new Error(describeError(err, `Downloading ${fi.name}`)));
    } finally {
      t.done();
    }
  };

  const mkdir = async (): Promise<void> => {
    const name = window.prompt("Name of the new folder");
    if (!name) return;
    if (name.includes("/")) {
      setActionError(new Error("A folder name cannot contain /."));
      return;
    }
    try {
      await client.mkdir(sandboxID, joinPath(dir, name));
      listing.reload();
    } catch (err) {
      setActionError(new Error(describeError(err, "Making the folder")));
    }
  };

  const remove = async (fi: FileInfo): Promise<void> => {
    if (!window.confirm(`Delete ${fi.path}${fi.type === "dir" ? " and everything in it" : ""}?`)) return;
    try {
      await client.deletePath(sandboxID, fi.path);
      if (file?.path === fi.path) setFile(null);
      listing.reload();
    } catch (err) {
      setActionError(new Error(describeError(err, `Deleting ${fi.name}`)));
    }
  };

  const onDrop = (e: DragEvent<HTMLDivElement>): void => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer.files.length > 0) void upload(e.dataTransfer.files);
  };

  const entries = (listing.data?.entries ?? []).filter((e) => e.path !== dir && parentOf(e.path) === (dir === "/" ? "/" : dir.replace(/\/$/, "")));
  entries.sort((a, b) => (a.type === "dir") !== (b.type === "dir") ? (a.type === "dir" ? -1 : 1) : a.name.localeCompare(b.name));
  const crumbs = dir.split("/").filter(Boolean);

  return (
    <div
      className={dragging ? "files files-drop" : "files"}
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      <div className="files-bar">
        <nav className="crumbs" aria-label="Folder">
          <button type="button" className="link-button" onClick={() => { setDir("/"); setFile(null); }}>/</button>
          {crumbs.map((c, i) => {
            const p = "/" + crumbs.slice(0, i + 1).join("/");
            return (
              <span key={p}>
                <button type="button" className="link-button" onClick={() => { setDir(p); setFile(null); }}>
                  {c}
                </button>
                {i < crumbs.length - 1 ? "/" : ""}
              </span>
            );
          })}
        </nav>
        <div className="files-actions">
          <button type="button" className="btn btn-small" onClick={() => listing.reload()}>Refresh</button>
          <button type="button" className="btn btn-small" onClick={() => void mkdir()}>New folder</button>
          <button type="button" className="btn btn-small btn-primary" onClick={() => input.current?.click()}>Upload…</button>
          <input ref={input} type="file" multiple hidden data-testid="upload-input" onChange={(e) => { if (e.target.files) void upload(e.target.files); e.target.value = ""; }} />
        </div>
      </div>
      {transfers.map((t) => (
        <ProgressBar key={t.id} label={t.label} loaded={t.loaded} total={t.total} />
      ))}
      {actionError !== null && <ErrorNote error={actionError} />}
      <div className="files-body">
        <div className="files-list">
          {listing.loading && !listing.data ? <Spinner label="Listing…" /> : null}
          <ErrorNote error={listing.error} doing={`Listing ${dir}`} onRetry={listing.reload} />
          <table className="table table-files">
            <thead>
              <tr><th>Name</th><th className="num">Size</th><th className="hide-narrow">Modified</th><th><span className="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {dir !== "/" && (
                <tr>
                  <td colSpan={4}>
                    <button type="button" className="link-button" onClick={() => { setDir(parentOf(dir)); setFile(null); }}><Icon name="up" /> ..</button>
                  </td>
                </tr>
              )}
              {entries.map((e) => (
                <tr key={e.path} className={file?.path === e.path ? "selected" : undefined}>
                  <td>
                    <button
                      type="button"
                      className="link-button file-name"
                      onClick={() => (e.type === "dir" ? (setDir(e.path), setFile(null)) : setFile(e))}
                    >
                      <Icon name={e.type === "dir" ? "folder" : e.type === "symlink" ? "link" : "file"} />
                      {e.name}
                    </button>
                  </td>
                  <td className="num">{e.type === "dir" ? "" : formatBytes(e.size)}</td>
                  <td className="hide-narrow muted">{relativeTime(e.mtime)}</td>
                  <td className="row-actions">
                    <button type="button" className="btn btn-small btn-quiet" onClick={() => void download(e)} aria-label={`Download ${e.name}`} title="Download"><Icon name="download" /></button>
                    <button type="button" className="btn btn-small btn-quiet" onClick={() => void remove(e)} aria-label={`Delete ${e.name}`} title="Delete"><Icon name="trash" /></button>
                  </td>
                </tr>
              ))}
              {listing.data && entries.length === 0 && (
                <tr><td colSpan={4} className="muted">This folder is empty. Drop files here to upload them.</td></tr>
              )}
            </tbody>
          </table>
          {listing.data?.truncated && <div className="muted">The listing was cut short: this folder has too many entries.</div>}
        </div>
        {file && <FileViewer client={client} sandboxID={sandboxID} file={file} onDownload={() => void download(file)} onClose={() => setFile(null)} />}
      </div>
    </div>
  );
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

function FileViewer({ client, sandboxID, file, onDownload, onClose }: { client: Client; sandboxID: string; file: FileInfo; onDownload: () => void; onClose: () => void }) {
  const content = useLoad(
    async (signal) => {
      if (file.size > maxView) return { text: null as string | null, binary: false, partial: true };
      const r = await client.readFile(sandboxID, file.path, maxView, signal);
      if (looksBinary(r.data)) return { text: null, binary: true, partial: r.partial };
      return { text: utf8.decode(r.data), binary: false, partial: r.partial };
    },
    [client, sandboxID, file.path, file.mtime],
  );
  return (
    <div className="file-viewer" data-testid="file-viewer">
      <div className="file-viewer-head">
        <strong className="file-viewer-name">{file.path}</strong>
        <span className="muted">{formatBytes(file.size)}</span>
        <button type="button" className="btn btn-small" onClick={onDownload}>Download</button>
        <button type="button" className="btn btn-small btn-quiet" onClick={onClose} aria-label="Close the file">×</button>
      </div>
      {content.loading && <Spinner label="Reading…" />}
      <ErrorNote error={content.error} doing={`Reading ${file.name}`} onRetry={content.reload} />
      {content.data && content.data.text === null && (
        <div className="empty">
          {content.data.binary ? "This is a binary file." : `This file is larger than ${formatBytes(maxView)}.`} Download it to open it.
        </div>
      )}
      {content.data && content.data.text !== null && <CodeView text={content.data.text} filename={file.name} />}
    </div>
  );
}
