package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/llm"
)

// Editor limits.
const (
	maxViewLines = 2000    // lines of a file shown without a range
	maxEditFile  = 8 << 20 // the largest file the editor reads
	// undoDir keeps the editor's undo snapshots in the sandbox, outside
	// the workspace, so undo survives a restart of the control plane.
	undoDir = "/tmp/.corral-agent/undo"
	undoMax = 20 // snapshots kept per file
)

// Editor views and edits files: view (with line numbers, optionally a
// range; a directory lists two levels), create, str_replace (the old text
// must occur exactly once), insert (after a line), undo (the file's last
// edit).
type Editor struct{ env *Env }

// NewEditor returns the editor tool of env.
func NewEditor(env *Env) *Editor { return &Editor{env: env} }

// Spec implements Tool.
func (e *Editor) Spec() llm.Tool {
	return llm.Tool{Name: "editor", Description: "View and edit files. Commands: view (a file with line numbers, " +
		"optionally view_range [start, end] with end -1 for the end of the file; a directory lists its contents two levels deep), " +
		"create (write file_text to path, replacing any file), str_replace (replace old_str, which must occur exactly once, " +
		"with new_str; include enough context to make it unique), insert (insert new_str after line insert_line; 0 inserts at the top), " +
		"undo (revert the last edit of path). Paths are absolute or relative to the workspace.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"command":{"type":"string","enum":["view","create","str_replace","insert","undo"]},
"path":{"type":"string","minLength":1},
"view_range":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2},
"file_text":{"type":"string"},
"old_str":{"type":"string","minLength":1},
"new_str":{"type":"string"},
"insert_line":{"type":"integer","minimum":0}},
"required":["command","path"],"additionalProperties":false,
"allOf":[
{"if":{"properties":{"command":{"const":"create"}}},"then":{"required":["file_text"]}},
{"if":{"properties":{"command":{"const":"str_replace"}}},"then":{"required":["old_str"]}},
{"if":{"properties":{"command":{"const":"insert"}}},"then":{"required":["insert_line","new_str"]}}]}`)}
}

type editorInput struct {
	Command    string `json:"command"`
	Path       string `json:"path"`
	ViewRange  []int  `json:"view_range"`
	FileText   string `json:"file_text"`
	OldStr     string `json:"old_str"`
	NewStr     string `json:"new_str"`
	InsertLine *int   `json:"insert_line"`
}

// Run implements Tool.
func (e *Editor) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	var in editorInput
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	p := abs(e.env.Workdir, in.Path)
	var (
		res Result
		err error
	)
	switch in.Command {
	case "view":
		res, err = e.view(ctx, p, in.ViewRange)
	case "create":
		res, err = e.create(ctx, p, in.FileText)
	case "str_replace":
		res, err = e.replace(ctx, p, in.OldStr, in.NewStr)
	case "insert":
		res, err = e.insert(ctx, p, *in.InsertLine, in.NewStr)
	case "undo":
		res, err = e.undo(ctx, p)
	}
	return fileError(res, err, p)
}

// fileError turns the request-side errors of the files API into
// observations; anything else is the sandbox failing.
func fileError(res Result, err error, p string) (Result, error) {
	if err == nil {
		return res, nil
	}
	var ob *observation
	switch {
	case errors.As(err, &ob):
		return Errorf("%s", ob.msg), nil
	case errors.Is(err, client.ErrNotFound):
		return Errorf("%s: no such file or directory", p), nil
	case errors.Is(err, client.ErrInvalid), errors.Is(err, client.ErrConflict),
		errors.Is(err, client.ErrForbidden), errors.Is(err, client.ErrTooLarge), errors.Is(err, client.ErrUnprocessable):
		return Errorf("%s: %v", p, err), nil
	}
	return Result{}, err
}

// observation is an error the model should see as is.
type observation struct{ msg string }

func (o *observation) Error() string { return o.msg }

func observe(format string, args ...any) error { return &observation{fmt.Sprintf(format, args...)} }

func (e *Editor) read(ctx context.Context, p string) (string, error) {
	st, err := e.env.Sandbox.Stat(ctx, p)
	if err != nil {
		return "", err
	}
	if st.Type != sandboxapi.FileTypeFile {
		return "", observe("%s is a %s, not a file", p, st.Type)
	}
	if st.Size > maxEditFile {
		return "", observe("%s is %d bytes; the editor handles files up to %d bytes (use bash: head, sed -n, grep)", p, st.Size, maxEditFile)
	}
	rc, err := e.env.Sandbox.ReadFile(ctx, p)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxEditFile+1))
	if err != nil {
		return "", fmt.Errorf("tools: reading %s: %w", p, err)
	}
	if !utf8.Valid(b) {
		return "", observe("%s is not UTF-8 text", p)
	}
	return string(b), nil
}

func (e *Editor) write(ctx context.Context, p, text string) error {
	_, err := e.env.Sandbox.WriteFile(ctx, p, strings.NewReader(text), 0o644)
	return err
}

func (e *Editor) view(ctx context.Context, p string, rng []int) (Result, error) {
	st, err := e.env.Sandbox.Stat(ctx, p)
	if err != nil {
		return Result{}, err
	}
	if st.Type == sandboxapi.FileTypeDir {
		l, err := e.env.Sandbox.List(ctx, p, 2)
		if err != nil {
			return Result{}, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s/\n", strings.TrimSuffix(p, "/"))
		names := make([]string, 0, len(l.Entries))
		for _, en := range l.Entries {
			if strings.HasPrefix(en.Name, ".") || strings.Contains(en.Path, "/.git/") || strings.Contains(en.Path, "/node_modules/") {
				continue
			}
			n := en.Path
			if en.Type == sandboxapi.FileTypeDir {
				n += "/"
			}
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b.WriteString(n + "\n")
		}
		return Result{Output: b.String()}, nil
	}
	text, err := e.read(ctx, p)
	if err != nil {
		return Result{}, err
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start, end := 1, len(lines)
	if rng != nil {
		start, end = rng[0], rng[1]
		if end == -1 {
			end = len(lines)
		}
		if start < 1 || start > max(len(lines), 1) || end < start || end > len(lines) {
			return Errorf("view_range %v is outside %s's %d lines", rng, p, len(lines)), nil
		}
	}
	cut := false
	if rng == nil && end-start+1 > maxViewLines {
		end, cut = start+maxViewLines-1, true
	}
	var b strings.Builder
	for i := start; i <= end && i <= len(lines); i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	if cut {
		fmt.Fprintf(&b, "[… %d more lines: view with a view_range …]\n", len(lines)-end)
	}
	return Result{Output: b.String()}, nil
}

func (e *Editor) create(ctx context.Context, p, text string) (Result, error) {
	old, err := e.read(ctx, p)
	existed := err == nil
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return Result{}, err
	}
	if existed {
		if err := e.snapshot(ctx, p, old); err != nil {
			return Result{}, err
		}
	} else if err := e.snapshotAbsent(ctx, p); err != nil {
		return Result{}, err
	}
	dir := p[:strings.LastIndexByte(p, '/')+1]
	if dir != "" && dir != "/" {
		if _, err := e.env.Sandbox.Mkdir(ctx, dir, true); err != nil {
			return Result{}, err
		}
	}
	if err := e.write(ctx, p, text); err != nil {
		return Result{}, err
	}
	verb := "created"
	if existed {
		verb = "overwrote"
	}
	return Result{Output: fmt.Sprintf("%s %s (%d lines)", verb, p, strings.Count(text, "\n")+boolInt(!strings.HasSuffix(text, "\n") && text != ""))}, nil
}

func (e *Editor) replace(ctx context.Context, p, old, repl string) (Result, error) {
	text, err := e.read(ctx, p)
	if err != nil {
		return Result{}, err
	}
	switch n := strings.Count(text, old); n {
	case 0:
		return Errorf("old_str was not found in %s; view the file and copy the text exactly (whitespace included)", p), nil
	case 1:
	default:
		return Errorf("old_str occurs %d times in %s; include more context so it is unique", n, p), nil
	}
	if err := e.snapshot(ctx, p, text); err != nil {
		return Result{}, err
	}
	i := strings.Index(text, old)
	updated := text[:i] + repl + text[i+len(old):]
	if err := e.write(ctx, p, updated); err != nil {
		return Result{}, err
	}
	line := strings.Count(text[:i], "\n") + 1
	return Result{Output: fmt.Sprintf("edited %s\n%s", p, snippet(updated, line, strings.Count(repl, "\n")+1))}, nil
}

func (e *Editor) insert(ctx context.Context, p string, after int, s string) (Result, error) {
	text, err := e.read(ctx, p)
	if err != nil {
		return Result{}, err
	}
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if after > len(lines) {
		return Errorf("insert_line %d is past the end of %s (%d lines)", after, p, len(lines)), nil
	}
	if err := e.snapshot(ctx, p, text); err != nil {
		return Result{}, err
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if after > 0 && !strings.HasSuffix(lines[after-1], "\n") {
		lines[after-1] += "\n"
	}
	updated := strings.Join(lines[:after], "") + s + strings.Join(lines[after:], "")
	if err := e.write(ctx, p, updated); err != nil {
		return Result{}, err
	}
	return Result{Output: fmt.Sprintf("inserted %d lines into %s after line %d\n%s", strings.Count(s, "\n"), p, after,
		snippet(updated, after+1, strings.Count(s, "\n")))}, nil
}

// snippet shows lines around [line, line+n) with numbers.
func snippet(text string, line, n int) string {
	lines := strings.Split(text, "\n")
	from, to := max(line-3, 1), min(line+n+2, len(lines))
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return b.String()
}

// Undo snapshots: undoDir/<sha256(path)>/<n> holds the content before
// edit n; a file named <n>.absent says the file did not exist.
func undoKey(p string) string {
	h := sha256.Sum256([]byte(p))
	return undoDir + "/" + hex.EncodeToString(h[:12])
}

func (e *Editor) snapshots(ctx context.Context, p string) ([]int, map[int]bool, error) {
	l, err := e.env.Sandbox.List(ctx, undoKey(p), 1)
	if errors.Is(err, client.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var ns []int
	absent := map[int]bool{}
	for _, en := range l.Entries {
		name, isAbsent := strings.CutSuffix(en.Name, ".absent")
		if n, err := strconv.Atoi(name); err == nil {
			ns = append(ns, n)
			absent[n] = isAbsent
		}
	}
	sort.Ints(ns)
	return ns, absent, nil
}

func (e *Editor) nextSnapshot(ctx context.Context, p string) (string, error) {
	ns, absent, err := e.snapshots(ctx, p)
	if err != nil {
		return "", err
	}
	if _, err := e.env.Sandbox.Mkdir(ctx, undoKey(p), true); err != nil {
		return "", err
	}
	for len(ns) >= undoMax { // forget the oldest
		name := strconv.Itoa(ns[0])
		if absent[ns[0]] {
			name += ".absent"
		}
		_ = e.env.Sandbox.DeleteFile(ctx, undoKey(p)+"/"+name, false)
		ns = ns[1:]
	}
	next := 1
	if len(ns) > 0 {
		next = ns[len(ns)-1] + 1
	}
	return undoKey(p) + "/" + strconv.Itoa(next), nil
}

func (e *Editor) snapshot(ctx context.Context, p, content string) error {
	name, err := e.nextSnapshot(ctx, p)
	if err != nil {
		return err
	}
	_, err = e.env.Sandbox.WriteFile(ctx, name, strings.NewReader(content), 0o600)
	return err
}

func (e *Editor) snapshotAbsent(ctx context.Context, p string) error {
	name, err := e.nextSnapshot(ctx, p)
	if err != nil {
		return err
	}
	_, err = e.env.Sandbox.WriteFile(ctx, name+".absent", strings.NewReader(""), 0o600)
	return err
}

func (e *Editor) undo(ctx context.Context, p string) (Result, error) {
	ns, absent, err := e.snapshots(ctx, p)
	if err != nil {
		return Result{}, err
	}
	if len(ns) == 0 {
		return Errorf("no edit of %s to undo", p), nil
	}
	last := ns[len(ns)-1]
	name := undoKey(p) + "/" + strconv.Itoa(last)
	if absent[last] {
		if err := e.env.Sandbox.DeleteFile(ctx, p, false); err != nil && !errors.Is(err, client.ErrNotFound) {
			return Result{}, err
		}
		_ = e.env.Sandbox.DeleteFile(ctx, name+".absent", false)
		return Result{Output: fmt.Sprintf("undid the creation of %s (removed it)", p)}, nil
	}
	rc, err := e.env.Sandbox.ReadFile(ctx, name)
	if err != nil {
		return Result{}, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return Result{}, fmt.Errorf("tools: reading an undo snapshot: %w", err)
	}
	if err := e.write(ctx, p, string(b)); err != nil {
		return Result{}, err
	}
	_ = e.env.Sandbox.DeleteFile(ctx, name, false)
	return Result{Output: fmt.Sprintf("reverted the last edit of %s", p)}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
