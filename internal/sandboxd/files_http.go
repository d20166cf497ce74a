package sandboxd

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/files"
	"github.com/corral-sh/corral/internal/sse"
)

// filesAPI serves /v1/fs/* (DESIGN.md §2, Files) over the confined root.
// Its lifetime is the Server's: close releases the root; stopping, closed
// when shutdown begins, ends watch streams.
//
// Statuses, where the contract leaves them open (package files picks the
// error classes; problem.Write maps them):
//
//	400  malformed path (relative, NUL, too long) or parameter (mode,
//	     depth, format, recursive, regexp, glob); a directory where a file
//	     is needed (GET, PUT, edit) or the reverse (list); a symlink loop;
//	     moving a directory into itself; a malformed archive
//	403  a path that escapes the root through `..` or a symlink; deleting,
//	     moving or replacing the root; an archive entry or link leaving its
//	     destination; permission denied by the OS
//	404  a missing path, or a missing parent (mkdir without parents, move)
//	409  the target exists (mkdir, move without overwrite); a non-empty
//	     directory without recursive; a parent that is a file; edit text
//	     not found or ambiguous; file/directory type clash on move
//	413  edit of a file over 64 MiB; a watch over 10000 directories; disk
//	     full (ENOSPC, EDQUOT)
//	503  inotify limits reached
//
// mkdir answers 201 when it created the directory and 200 when parents is
// set and it already existed (`mkdir -p`). list stops at 10000 entries,
// keeping the shallowest, and says so with "truncated": true.
type filesAPI struct {
	root     *files.Root
	stopping <-chan struct{}
}

func newFilesAPI(root string, stopping <-chan struct{}) (*filesAPI, error) {
	r, err := files.Open(root)
	if err != nil {
		return nil, err
	}
	return &filesAPI{root: r, stopping: stopping}, nil
}

func (f *filesAPI) close() { f.root.Close() }

// readFile serves GET /v1/fs/file: the raw bytes, Range and conditional
// requests honoured. ServeContent copies the *os.File with sendfile.
func (f *filesAPI) readFile(w http.ResponseWriter, r *http.Request) error {
	file, fi, err := f.root.Open(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	defer file.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	if fi.Size() == 0 {
		// Pseudo-files (/proc, /sys) report size 0 but have content;
		// ServeContent would trust the size and send nothing. Stream
		// whatever reading yields, without ranges or caching.
		w.WriteHeader(http.StatusOK)
		_, _ = io.Copy(w, file)
		return nil
	}
	h.Set("ETag", etag(fi))
	http.ServeContent(w, r, "", fi.ModTime(), file)
	return nil
}

// etag identifies a file version by size and modification time.
func etag(fi fs.FileInfo) string {
	return fmt.Sprintf(`"%x-%x"`, fi.ModTime().UnixNano(), fi.Size())
}

// writeFile serves PUT /v1/fs/file: the body streamed into place
// atomically; 200 FileInfo.
func (f *filesAPI) writeFile(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var opts files.WriteOptions
	if m := q.Get("mode"); m != "" {
		mode, err := files.ParseMode(m)
		if err != nil {
			return err
		}
		opts = files.WriteOptions{Mode: mode, ModeSet: true}
	}
	fi, err := f.root.WriteFile(q.Get("path"), r.Body, opts)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, fi)
	return nil
}

// deleteFile serves DELETE /v1/fs/file; 204.
func (f *filesAPI) deleteFile(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	recursive, err := queryBool(q.Get("recursive"), "recursive")
	if err != nil {
		return err
	}
	if err := f.root.Remove(q.Get("path"), recursive); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stat serves GET /v1/fs/stat: FileInfo, a symlink described as itself.
func (f *filesAPI) stat(w http.ResponseWriter, r *http.Request) error {
	fi, err := f.root.Stat(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, fi)
	return nil
}

// list serves GET /v1/fs/list?depth=N (default 1, at most
// files.MaxListDepth).
func (f *filesAPI) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	depth := 1
	if d := q.Get("depth"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			return errdefs.Invalidf("depth %q is not an integer", d)
		}
		depth = n
	}
	entries, truncated, err := f.root.List(r.Context(), q.Get("path"), depth)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, sandboxapi.FileList{Entries: entries, Truncated: truncated})
	return nil
}

// mkdir serves POST /v1/fs/mkdir: 201 when created, 200 when parents is
// set and the directory already existed.
func (f *filesAPI) mkdir(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.MkdirRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	fi, created, err := f.root.Mkdir(req.Path, req.Parents)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpjson.Write(w, status, fi)
	return nil
}

// move serves POST /v1/fs/move: 200 FileInfo of the new path.
func (f *filesAPI) move(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.MoveRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	fi, err := f.root.Move(req.From, req.To, req.Overwrite)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, fi)
	return nil
}

// getArchive serves GET /v1/fs/archive?format=tar.gz|tar|zip, streamed.
// Once the body has started, a failure can no longer become a problem
// response: it is logged and the connection aborted, so the client sees a
// broken transfer rather than a complete-looking partial archive.
func (f *filesAPI) getArchive(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	format, err := files.ParseFormat(q.Get("format"))
	if err != nil {
		return err
	}
	pk, err := f.root.Pack(q.Get("path"), format)
	if err != nil {
		return err
	}
	defer pk.Close()
	h := w.Header()
	h.Set("Content-Type", format.ContentType())
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": pk.FileName()}))
	w.WriteHeader(http.StatusOK)
	dw := deadlineWriter{w: w, rc: http.NewResponseController(w)}
	if err := pk.Stream(r.Context(), dw); err != nil {
		if r.Context().Err() != nil {
			return nil // the client went away
		}
		slog.ErrorContext(r.Context(), "archive stream failed", "path", q.Get("path"), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// deadlineWriter pushes the connection's write deadline out before each
// write, so a client that stops reading fails the stream after
// sse.WriteTimeout instead of pinning the handler.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(sse.WriteTimeout))
	return d.w.Write(p)
}

// putArchive serves PUT /v1/fs/archive: a tar or tar.gz body extracted
// under path; 200 ArchiveResult.
func (f *filesAPI) putArchive(w http.ResponseWriter, r *http.Request) error {
	res, err := f.root.Extract(r.Context(), r.URL.Query().Get("path"), r.Body)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// watch serves GET /v1/fs/watch as server-sent events: one event per
// change (`event: fs.create`, `data: {"path","type"}`), a `: ping` comment
// every sse.HeartbeatInterval. The headers are sent once the watches are in
// place, so a client that has them sees every later change. The stream
// ends when the client goes or the daemon stops.
func (f *filesAPI) watch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	recursive, err := queryBool(q.Get("recursive"), "recursive")
	if err != nil {
		return err
	}
	wt, err := f.root.Watch(q.Get("path"), recursive)
	if err != nil {
		return err
	}
	defer wt.Close()
	stream := sse.Start(w)
	ping := time.NewTicker(sse.HeartbeatInterval)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return nil
		case <-f.stopping:
			return nil
		case <-ping.C:
			err = stream.Comment("ping")
		case ev, ok := <-wt.Events():
			if !ok {
				return nil
			}
			err = stream.Queue("", ev.Kind, ev.WatchEvent)
			// Send what else is already queued in the same flush.
			for n := len(wt.Events()); err == nil && n > 0; n-- {
				ev := <-wt.Events()
				err = stream.Queue("", ev.Kind, ev.WatchEvent)
			}
			if err == nil {
				err = stream.Flush()
			}
		}
		if err != nil {
			slog.DebugContext(r.Context(), "watch stream ended", "err", err)
			return nil
		}
	}
}

// search serves POST /v1/fs/search.
func (f *filesAPI) search(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.SearchRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	res, err := f.root.Search(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// edit serves POST /v1/fs/edit.
func (f *filesAPI) edit(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.EditRequest
	if err := httpjson.Decode(w, r, &req, files.MaxEditSize); err != nil {
		return err
	}
	n, err := f.root.Edit(req.Path, req.OldText, req.NewText, req.ReplaceAll)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, sandboxapi.EditResult{Replacements: n})
	return nil
}

// queryBool parses an optional boolean query parameter.
func queryBool(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errdefs.Invalidf("%s=%q is not a boolean", name, v)
	}
	return b, nil
}
