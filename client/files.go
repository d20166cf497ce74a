package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Paths are absolute inside the sandbox; the daemon resolves them under
// its root and answers ErrForbidden for any that escape it.

// ReadFile streams a file's content. The caller closes the body.
func (c *Client) ReadFile(ctx context.Context, path string) (io.ReadCloser, error) {
	return c.ReadFileRange(ctx, path, 0, -1)
}

// ReadFileRange streams length bytes of a file from offset; a negative
// length reads to the end.
func (c *Client) ReadFileRange(ctx context.Context, path string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || length == 0 {
		return nil, fmt.Errorf("client: read %q: range %d+%d: %w", path, offset, length, ErrInvalid)
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint("/fs/file", url.Values{"path": {path}}), nil)
	if err != nil {
		return nil, err
	}
	ranged := offset > 0 || length > 0
	if ranged {
		r := fmt.Sprintf("bytes=%d-", offset)
		if length > 0 {
			r += strconv.FormatInt(offset+length-1, 10)
		}
		req.Header.Set("Range", r)
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	if ranged && resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, fmt.Errorf("client: read %q: range not honoured (status %d)", path, resp.StatusCode)
	}
	return resp.Body, nil
}

// WriteFile writes a file from r, streaming it (nothing is buffered whole):
// parents are created and the file is replaced atomically. mode sets the
// permission bits; 0 leaves the daemon's default.
func (c *Client) WriteFile(ctx context.Context, path string, r io.Reader, mode os.FileMode) (*sandboxapi.FileInfo, error) {
	q := url.Values{"path": {path}}
	if mode != 0 {
		q.Set("mode", fmt.Sprintf("%04o", mode.Perm()))
	}
	req, err := c.newRequest(ctx, http.MethodPut, c.endpoint("/fs/file", q), r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	return c.doFileInfo(req)
}

func (c *Client) doFileInfo(req *http.Request) (*sandboxapi.FileInfo, error) {
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var fi sandboxapi.FileInfo
	if err := json.NewDecoder(resp.Body).Decode(&fi); err != nil {
		return nil, fmt.Errorf("client: %s %s: decode response: %w", req.Method, req.URL.Path, err)
	}
	return &fi, nil
}

// DeleteFile removes a file, or a directory (with its content when
// recursive).
func (c *Client) DeleteFile(ctx context.Context, path string, recursive bool) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	return c.call(ctx, http.MethodDelete, "/fs/file", q, nil, nil)
}

// Stat describes one path, without following a final symlink.
func (c *Client) Stat(ctx context.Context, path string) (*sandboxapi.FileInfo, error) {
	var fi sandboxapi.FileInfo
	if err := c.call(ctx, http.MethodGet, "/fs/stat", url.Values{"path": {path}}, nil, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// List lists a directory, descending depth levels (0 uses the daemon's
// default of 1). Entries come in tree order; Truncated says the daemon
// stopped at its entry cap.
func (c *Client) List(ctx context.Context, path string, depth int) (*sandboxapi.FileList, error) {
	q := url.Values{"path": {path}}
	if depth > 0 {
		q.Set("depth", strconv.Itoa(depth))
	}
	var list sandboxapi.FileList
	if err := c.call(ctx, http.MethodGet, "/fs/list", q, nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// Mkdir creates a directory, and its missing parents when parents is set;
// with parents, an existing directory is not an error.
func (c *Client) Mkdir(ctx context.Context, path string, parents bool) (*sandboxapi.FileInfo, error) {
	var fi sandboxapi.FileInfo
	if err := c.call(ctx, http.MethodPost, "/fs/mkdir", nil, sandboxapi.MkdirRequest{Path: path, Parents: parents}, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// Move renames from to to and describes the result; ErrConflict when to
// exists and overwrite is not set.
func (c *Client) Move(ctx context.Context, from, to string, overwrite bool) (*sandboxapi.FileInfo, error) {
	var fi sandboxapi.FileInfo
	if err := c.call(ctx, http.MethodPost, "/fs/move", nil, sandboxapi.MoveRequest{From: from, To: to, Overwrite: overwrite}, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// Archive formats of DownloadArchive.
const (
	ArchiveTarGz = "tar.gz"
	ArchiveTar   = "tar"
	ArchiveZip   = "zip"
)

// DownloadArchive streams a directory as an archive, format being
// ArchiveTarGz (the default when empty), ArchiveTar or ArchiveZip. The
// caller closes the body; a transfer that fails midway ends in a read
// error, never in a complete-looking archive.
func (c *Client) DownloadArchive(ctx context.Context, path, format string) (io.ReadCloser, error) {
	q := url.Values{"path": {path}}
	if format != "" {
		q.Set("format", format)
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint("/fs/archive", q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// UploadArchive extracts a tar or tar.gz stream into the directory path,
// streaming it. The daemon refuses entries and links that would land
// outside it.
func (c *Client) UploadArchive(ctx context.Context, path string, r io.Reader) (*sandboxapi.ArchiveResult, error) {
	br := bufio.NewReader(r)
	ctype := "application/x-tar"
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		ctype = "application/gzip"
	}
	req, err := c.newRequest(ctx, http.MethodPut, c.endpoint("/fs/archive", url.Values{"path": {path}}), br)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var res sandboxapi.ArchiveResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("client: PUT %s: decode response: %w", req.URL.Path, err)
	}
	return &res, nil
}

// FileEvent is one event of Watch.
type FileEvent struct {
	// Op is sandboxapi.FSEventCreate, ...Write, ...Remove, ...Rename,
	// ...Chmod, or FSEventOverflow when the daemon dropped events (rescan).
	Op       string
	Path     string
	FileType string // sandboxapi.FileTypeFile, ...; empty when unknown
}

// Watch streams changes under path (GET /v1/fs/watch). It returns once
// the daemon's watches are in place: every later change is reported.
func (c *Client) Watch(ctx context.Context, path string, recursive bool) (*EventStream[FileEvent], error) {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	resp, err := c.openSSE(ctx, "/fs/watch", q, "")
	if err != nil {
		return nil, err
	}
	return newEventStream(resp.Body, func(ev sseEvent) (FileEvent, bool, error) {
		var w sandboxapi.WatchEvent
		if err := json.Unmarshal(ev.Data, &w); err != nil {
			return FileEvent{}, false, fmt.Errorf("client: watch event %q: %w", ev.Event, err)
		}
		return FileEvent{Op: ev.Event, Path: w.Path, FileType: w.Type}, true, nil
	}), nil
}

// Search finds lines matching an RE2 pattern under a directory.
func (c *Client) Search(ctx context.Context, req sandboxapi.SearchRequest) (*sandboxapi.SearchResult, error) {
	var res sandboxapi.SearchResult
	if err := c.call(ctx, http.MethodPost, "/fs/search", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Edit replaces text in a file; ErrConflict when old_text is missing, or
// found more than once without ReplaceAll.
func (c *Client) Edit(ctx context.Context, req sandboxapi.EditRequest) (*sandboxapi.EditResult, error) {
	var res sandboxapi.EditResult
	if err := c.call(ctx, http.MethodPost, "/fs/edit", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
