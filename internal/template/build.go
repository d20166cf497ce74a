package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultCacheDir holds built template tarballs.
const DefaultCacheDir = "/var/cache/corral/templates"

// sourceDateEpoch is given to mmdebstrap as SOURCE_DATE_EPOCH, so the same
// definition and mirror content give the same tarball (2025-01-01 UTC).
const sourceDateEpoch = 1735689600

// Options configure Build.
type Options struct {
	// Name is the template, as Lookup takes it.
	Name string
	// CacheDir holds the tarballs; DefaultCacheDir when empty.
	CacheDir string
	// Mirror is the Debian mirror; when empty, the first one the host's
	// apt sources use for the template's suite, else deb.debian.org.
	Mirror string
	// Log receives progress and mmdebstrap's output; nil discards it.
	Log io.Writer
	// Mmdebstrap is the program to run; "mmdebstrap" from $PATH when empty.
	Mmdebstrap string
}

// Plan is what Build would do for a template: the definition, the exact
// mmdebstrap arguments and the tarball they produce.
type Plan struct {
	Def  Definition
	Args []string
	// Path is the tarball, <CacheDir>/<name>-<hash>.tar, where hash covers
	// Args and the build's fixed environment.
	Path string
}

// NewPlan resolves opts (filling in defaults) into a Plan. It does not
// touch the cache.
func NewPlan(opts Options) (Plan, error) {
	p, _, err := plan(opts)
	return p, err
}

// plan returns the Plan and opts with its defaults filled in.
func plan(opts Options) (Plan, Options, error) {
	def, err := Lookup(opts.Name)
	if err != nil {
		return Plan{}, opts, err
	}
	opts = opts.withDefaults(def.Suite)
	p := Plan{Def: def, Args: def.args(opts.Mirror)}
	p.Path = filepath.Join(opts.CacheDir, def.Name+"-"+hashArgs(p.Args)+".tar")
	return p, opts, nil
}

// Build makes the tarball of a template and returns its path. An existing
// tarball of the same plan is reused without running mmdebstrap; a new one
// is written to a temporary file and renamed into place when complete.
// Concurrent builds of one plan, in any processes, run mmdebstrap once.
func Build(ctx context.Context, opts Options) (string, error) {
	p, opts, err := plan(opts)
	if err != nil {
		return "", err
	}
	log := opts.Log
	if cached(p.Path) {
		fmt.Fprintf(log, "template %s: cached %s\n", p.Def.Name, p.Path)
		return p.Path, nil
	}
	bin, err := exec.LookPath(opts.Mmdebstrap)
	if err != nil {
		return "", fmt.Errorf("template %s: mmdebstrap is needed to build templates (apt-get install mmdebstrap): %w", p.Def.Name, err)
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return "", fmt.Errorf("template cache: %w", err)
	}
	// One build of a plan at a time; whoever waited finds the tarball.
	dir, base := filepath.Split(p.Path)
	unlock, err := lock(ctx, filepath.Join(dir, "."+strings.TrimSuffix(base, ".tar")+".lock"))
	if err != nil {
		return "", fmt.Errorf("template %s: %w", p.Def.Name, err)
	}
	defer unlock()
	if cached(p.Path) {
		fmt.Fprintf(log, "template %s: built meanwhile: %s\n", p.Def.Name, p.Path)
		return p.Path, nil
	}
	tmp, err := os.CreateTemp(opts.CacheDir, "."+p.Def.Name+"-*.tar.partial")
	if err != nil {
		return "", fmt.Errorf("template cache: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()

	fmt.Fprintf(log, "template %s: building %s with mmdebstrap from %s\n", p.Def.Name, p.Path, opts.Mirror)
	start := time.Now()
	if err := run(ctx, bin, p.Args, tmp, log); err != nil {
		return "", fmt.Errorf("template %s: %w", p.Def.Name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", fmt.Errorf("template %s: %w", p.Def.Name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("template %s: write tarball: %w", p.Def.Name, err)
	}
	if err := os.Rename(tmp.Name(), p.Path); err != nil {
		return "", fmt.Errorf("template %s: %w", p.Def.Name, err)
	}
	if fi, err := os.Stat(p.Path); err == nil {
		fmt.Fprintf(log, "template %s: built %s (%d MiB) in %s\n", p.Def.Name, p.Path, fi.Size()>>20, time.Since(start).Round(time.Second))
	}
	return p.Path, nil
}

// cached reports whether the tarball exists.
func cached(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// run runs mmdebstrap writing the tarball to out and its messages to log.
// Cancelling ctx sends SIGTERM, so mmdebstrap can unmount and remove its
// temporary root before it exits.
func run(ctx context.Context, bin string, args []string, out *os.File, log io.Writer) error {
	tail := &tailBuffer{max: 2 << 10}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.Itoa(sourceDateEpoch))
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(log, tail)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("mmdebstrap: %w", ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("mmdebstrap: %w: %s", err, tail.String())
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("write tarball: %w", err)
	}
	return nil
}

// args is the mmdebstrap command line for d, writing a tarball to stdout.
func (d Definition) args(mirror string) []string {
	args := []string{
		"--variant=" + d.Variant,
		"--format=tar",
		"--include=" + strings.Join(d.Packages, ","),
		"--skip=cleanup/run", // see the /run hook
	}
	for _, o := range slimOptions {
		args = append(args, "--dpkgopt="+o)
	}
	for _, h := range d.Hooks {
		args = append(args, "--customize-hook="+h)
	}
	return append(args, d.Suite, "-", mirror)
}

// hashArgs is the cache key of a build: the arguments and the fixed
// environment, 12 hex digits of SHA-256.
func hashArgs(args []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "SOURCE_DATE_EPOCH=%d\x00", sourceDateEpoch)
	for _, a := range args {
		io.WriteString(h, a)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func (o Options) withDefaults(suite string) Options {
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir
	}
	if o.Mirror == "" {
		o.Mirror = HostMirror("/etc/apt", suite)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Mmdebstrap == "" {
		o.Mmdebstrap = "mmdebstrap"
	}
	return o
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// String is the kept output from its first whole line, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) == t.max {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "no output"
	}
	return s
}
