package procs

import (
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Limits on what a spawn request may ask for.
const (
	DefaultBufferBytes = 1 << 20
	MaxBufferBytes     = 256 << 20
	maxTag             = 128
	maxLabel           = 256
)

// command is the validated, resolved form of what to run.
type command struct {
	path  string   // resolved executable
	argv  []string // argv[0] is the command as given
	cwd   string
	env   []string          // full environment of the child
	extra map[string]string // the caller's additions, reported back
}

// resolve validates what to run and finds it. Bad fields are ErrInvalid;
// a missing cwd or executable is ErrUnprocessable.
func resolve(name string, args []string, cwd string, env map[string]string, pty bool) (command, error) {
	var c command
	if name == "" {
		return c, errdefs.Invalidf("command is required")
	}
	for _, s := range append([]string{name, cwd}, args...) {
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return c, errdefs.Invalidf("command, args and cwd must be valid UTF-8 without NUL bytes")
		}
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return c, errdefs.Invalidf("env name %q is not valid", k)
		}
	}
	if cwd == "" {
		cwd = defaultCwd()
	}
	if !filepath.IsAbs(cwd) {
		return c, errdefs.Invalidf("cwd %q must be an absolute path", cwd)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return c, errdefs.Unprocessablef("cwd %q is not an existing directory", cwd)
	}
	c.cwd = cwd
	c.extra = env
	c.env = mergeEnv(os.Environ(), env, pty)
	path, err := lookPath(name, envValue(c.env, "PATH"), cwd)
	if err != nil {
		return c, err
	}
	c.path = path
	c.argv = append([]string{name}, args...)
	return c, nil
}

func defaultCwd() string {
	for _, d := range []string{"/workspace", os.Getenv("HOME")} {
		if fi, err := os.Stat(d); d != "" && err == nil && fi.IsDir() {
			return d
		}
	}
	return "/"
}

// mergeEnv overlays extra on base. The daemon's own token never reaches a
// child; PTY children get a TERM if they have none.
func mergeEnv(base []string, extra map[string]string, pty bool) []string {
	out := make([]string, 0, len(base)+len(extra)+1)
	seen := make(map[string]bool, len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CORRAL_SANDBOX_TOKEN" {
			continue
		}
		if v, ok := extra[k]; ok {
			out = append(out, k+"="+v)
			seen[k] = true
			continue
		}
		out = append(out, kv)
		seen[k] = true
	}
	for k, v := range extra {
		if !seen[k] {
			out = append(out, k+"="+v)
			seen[k] = true
		}
	}
	if pty && !seen["TERM"] {
		out = append(out, "TERM=xterm-256color")
	}
	return out
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPath finds name as the child would: in the child's PATH, or relative
// to its cwd when name has a slash.
func lookPath(name, pathEnv, cwd string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if isExecutable(p) {
			return p, nil
		}
		return "", errdefs.Unprocessablef("executable %q not found or not executable", name)
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", errdefs.Unprocessablef("executable %q not found in PATH", name)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func validateSpawn(req *sandboxapi.SpawnRequest) error {
	switch {
	case len(req.Tag) > maxTag:
		return errdefs.Invalidf("tag is longer than %d bytes", maxTag)
	case len(req.Label) > maxLabel:
		return errdefs.Invalidf("label is longer than %d bytes", maxLabel)
	case req.TimeoutMS < 0:
		return errdefs.Invalidf("timeout_ms must not be negative")
	case req.BufferBytes < 0 || req.BufferBytes > MaxBufferBytes:
		return errdefs.Invalidf("buffer_bytes must be between 1 and %d", MaxBufferBytes)
	}
	if req.PTY != nil {
		if err := sandboxapi.ValidSize(req.PTY.Rows, req.PTY.Cols); err != nil {
			return errdefs.Invalidf("pty: %v", err)
		}
	}
	return nil
}
