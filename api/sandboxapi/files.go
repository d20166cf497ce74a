package sandboxapi

import "time"

// File types in FileInfo.Type.
const (
	FileTypeFile    = "file"
	FileTypeDir     = "dir"
	FileTypeSymlink = "symlink"
	FileTypeOther   = "other"
)

// FileInfo describes one path. Mode is the permission bits in octal text
// ("0644"); Target is set for symlinks.
type FileInfo struct {
	Path   string    `json:"path"`
	Name   string    `json:"name"`
	Type   string    `json:"type"`
	Size   int64     `json:"size"`
	Mode   string    `json:"mode"`
	MTime  time.Time `json:"mtime"`
	Target string    `json:"target,omitempty"`
}

// FileList is the body of GET /v1/fs/list. Entries are in tree order
// (each directory followed by its contents). Truncated is true when the
// listing stopped at the server's entry cap; the entries kept are the
// shallowest ones.
type FileList struct {
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// ArchiveResult is the body answering PUT /v1/fs/archive: Entries counts
// the directories, files, symlinks and hard links extracted; Skipped the
// entries of other types (devices, FIFOs) left out.
type ArchiveResult struct {
	Entries int `json:"entries"`
	Skipped int `json:"skipped"`
}

// MkdirRequest is the body of POST /v1/fs/mkdir.
type MkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents,omitempty"`
}

// MoveRequest is the body of POST /v1/fs/move.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// SearchRequest is the body of POST /v1/fs/search. Pattern is RE2; Glob
// filters file names (path.Match syntax, matched against the base name and
// the path relative to Path).
type SearchRequest struct {
	Path       string `json:"path"`
	Pattern    string `json:"pattern"`
	Glob       string `json:"glob,omitempty"`
	MaxResults int    `json:"max_results,omitempty"`
}

// SearchMatch is one matching line. Line and Column are 1-based.
type SearchMatch struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// SearchResult is the body answering POST /v1/fs/search.
type SearchResult struct {
	Matches   []SearchMatch `json:"matches"`
	Truncated bool          `json:"truncated"`
}

// EditRequest is the body of POST /v1/fs/edit.
type EditRequest struct {
	Path       string `json:"path"`
	OldText    string `json:"old_text"`
	NewText    string `json:"new_text"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// EditResult is the body answering POST /v1/fs/edit.
type EditResult struct {
	Replacements int `json:"replacements"`
}

// Watch event types on GET /v1/fs/watch.
const (
	FSEventCreate   = "fs.create"
	FSEventWrite    = "fs.write"
	FSEventRemove   = "fs.remove"
	FSEventRename   = "fs.rename"
	FSEventChmod    = "fs.chmod"
	FSEventOverflow = "fs.overflow"
)

// WatchEvent is the data of a /v1/fs/watch event. Type is the file type
// when known.
type WatchEvent struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}
