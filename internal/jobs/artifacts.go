package jobs

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// The artifact zip of a job, ArtifactsDir/<job id>.zip, holds:
//
//	workspace/...   the sandbox's /workspace, streamed from sandboxd as
//	                tar.gz and re-encoded entry by entry (files, directories,
//	                symlinks as symlinks). Left out: every .git directory (the
//	                history belongs to the repository; the job's changes are in
//	                changes.patch, and .git/objects can dwarf the rest) and,
//	                when /workspace is a git repository, whatever .gitignore
//	                ignores (node_modules, build output).
//	changes.patch   when /workspace is a git repository: `git diff --binary`
//	                of the working tree, untracked files included, against
//	                refs/corral/base if a repository job recorded one, else
//	                HEAD (the empty tree before the first commit). It is made
//	                with a copy of the index, so the workspace is untouched.
//	events.jsonl    the job's log up to packing, one cpapi.Event per line.
//
// Nothing is held whole in memory: entries stream from the sandbox to a
// temporary file, renamed into place when complete. Zips older than
// Retention are deleted by the guardian.
const (
	artifactName = "artifacts.zip"
	patchEntry   = "changes.patch"
	eventsEntry  = "events.jsonl"
	workspaceDir = "workspace/"
	gitTimeout   = 5 * time.Minute
)

// gitScript runs in the sandbox with the patch's path as $1: exit 3 if
// /workspace is not a git repository; else it writes the patch to $1 and
// prints the ignored paths, NUL-separated (directories end in /).
const gitScript = `command -v git >/dev/null 2>&1 || exit 3
cd /workspace && git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 3
set -e
idx=$(mktemp)
trap 'rm -f "$idx"' EXIT
cp "$(git rev-parse --git-path index)" "$idx" 2>/dev/null || rm -f "$idx"
export GIT_INDEX_FILE="$idx"
git add -A -N . >/dev/null
base=$(git rev-parse -q --verify refs/corral/base || git rev-parse -q --verify HEAD || git hash-object -t tree /dev/null)
git diff --binary "$base" >"$1"
git ls-files -z --others --ignored --exclude-standard --directory`

// zipPath is where job id's artifacts are.
func (m *Manager) zipPath(id string) string { return filepath.Join(m.opts.ArtifactsDir, id+".zip") }

// pack writes the artifact zip of r's job from its sandbox and the log,
// then appends an artifact event. It returns the zip's size.
func (m *Manager) pack(ctx context.Context, r *runner, cl *client.Client) (int64, error) {
	f, err := os.CreateTemp(m.opts.ArtifactsDir, r.id+".zip.tmp-*")
	if err != nil {
		return 0, fmt.Errorf("jobs: artifacts: %w", err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	zw := zip.NewWriter(bw)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})

	patch := "/tmp/corral-" + r.id + ".patch"
	ignored, repo := m.gitState(ctx, cl, r.id, patch)
	if err := addWorkspace(ctx, zw, cl, ignored); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: workspace: %w", r.id, err)
	}
	if repo {
		if err := addFile(ctx, zw, cl, patch, patchEntry); err != nil {
			return 0, fmt.Errorf("jobs: artifacts of %s: patch: %w", r.id, err)
		}
		_ = cl.DeleteFile(ctx, patch, false)
	}
	if err := m.addEvents(ctx, zw, r.id); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: events: %w", r.id, err)
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: %w", r.id, err)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: %w", r.id, err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: %w", r.id, err)
	}
	if err := os.Rename(f.Name(), m.zipPath(r.id)); err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: %w", r.id, err)
	}
	done = true
	fi, err := os.Stat(m.zipPath(r.id))
	if err != nil {
		return 0, fmt.Errorf("jobs: artifacts of %s: %w", r.id, err)
	}
	if err := r.emit(ctx, event(cpapi.EventArtifact, map[string]any{"name": artifactName, "size": fi.Size()})); err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// gitState writes the patch to patchPath in the sandbox and returns the
// ignored paths, if /workspace is a git repository. A git failure is
// logged and packs the workspace as a plain directory.
func (m *Manager) gitState(ctx context.Context, cl *client.Client, id, patchPath string) (map[string]bool, bool) {
	res, err := cl.Exec(ctx, sandboxapi.ExecRequest{Command: gitScript, Shell: true, Args: []string{patchPath},
		Cwd: runtime.WorkspaceDir, TimeoutMS: gitTimeout.Milliseconds(), MaxOutputBytes: 16 << 20})
	switch {
	case err != nil:
		m.log.Warn("jobs: git state of the workspace", "job", id, "err", err)
		return nil, false
	case res.ExitCode == nil || *res.ExitCode != 0:
		if res.ExitCode == nil || *res.ExitCode != 3 {
			m.log.Warn("jobs: git state of the workspace", "job", id, "exit", res.ExitCode, "stderr", res.Stderr)
		}
		return nil, false
	}
	ignored := map[string]bool{}
	for p := range strings.SplitSeq(res.Stdout, "\x00") {
		if p != "" {
			ignored[p] = true
		}
	}
	return ignored, true
}

// addWorkspace streams /workspace into zw under workspace/.
func addWorkspace(ctx context.Context, zw *zip.Writer, cl *client.Client, ignored map[string]bool) error {
	rc, err := cl.DownloadArchive(ctx, runtime.WorkspaceDir, client.ArchiveTarGz)
	if err != nil {
		return err
	}
	defer rc.Close()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name, ok := entryName(h.Name)
		if !ok || leftOut(name, h.Typeflag == tar.TypeDir, ignored) {
			continue
		}
		fh := &zip.FileHeader{Name: workspaceDir + name, Modified: h.ModTime}
		switch h.Typeflag {
		case tar.TypeDir:
			fh.Name += "/"
			fh.SetMode(fs.ModeDir | fs.FileMode(h.Mode).Perm())
			if _, err := zw.CreateHeader(fh); err != nil {
				return err
			}
		case tar.TypeReg:
			fh.Method = zip.Deflate
			fh.SetMode(fs.FileMode(h.Mode).Perm())
			w, err := zw.CreateHeader(fh)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			fh.SetMode(fs.ModeSymlink | 0o777)
			w, err := zw.CreateHeader(fh)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(w, h.Linkname); err != nil {
				return err
			}
		}
	}
}

// entryName cleans an archive entry's name; names that are absolute or
// climb out (a hostile sandbox could send them) are refused.
func entryName(n string) (string, bool) {
	n = path.Clean(strings.TrimSuffix(n, "/"))
	if n == "." || n == "" || path.IsAbs(n) || n == ".." || strings.HasPrefix(n, "../") {
		return "", false
	}
	return n, true
}

// leftOut reports whether the workspace entry name stays out of the zip:
// it is or is inside a .git directory, or git ignores it or a parent.
func leftOut(name string, dir bool, ignored map[string]bool) bool {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if p == ".git" {
			return true
		}
		prefix := strings.Join(parts[:i+1], "/")
		if (i < len(parts)-1 || dir) && ignored[prefix+"/"] || i == len(parts)-1 && ignored[prefix] {
			return true
		}
	}
	return false
}

// addFile copies a sandbox file into zw as name.
func addFile(ctx context.Context, zw *zip.Writer, cl *client.Client, src, name string) error {
	rc, err := cl.ReadFile(ctx, src)
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now()})
	if err != nil {
		return err
	}
	_, err = io.Copy(w, rc)
	return err
}

// addEvents writes the job's log into zw as events.jsonl.
func (m *Manager) addEvents(ctx context.Context, zw *zip.Writer, id string) error {
	w, err := zw.CreateHeader(&zip.FileHeader{Name: eventsEntry, Method: zip.Deflate, Modified: time.Now()})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	after := int64(0)
	for {
		evs, err := m.st.EventsAfter(ctx, id, after, 1000)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := enc.Encode(apiEvent(e)); err != nil {
				return err
			}
		}
		if len(evs) < 1000 {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// apiEvent is a stored event in its API form.
func apiEvent(e store.Event) cpapi.Event {
	return cpapi.Event{Seq: e.Seq, JobID: e.JobID, Time: e.Time, Type: e.Type, Data: e.Data}
}

// Artifacts returns the path of the tenant's job id's artifact zip. It is
// ErrNotFound until the job has completed or failed with artifacts, and
// after Retention.
func (m *Manager) Artifacts(ctx context.Context, tenantID, id string) (string, error) {
	j, err := m.st.GetJob(ctx, tenantID, id)
	if err != nil {
		return "", err
	}
	if j.Status != store.JobCompleted && j.Status != store.JobFailed {
		return "", errdefs.NotFoundf("job %q has no artifacts: it is %s", id, j.Status)
	}
	p := m.zipPath(id)
	if _, err := os.Stat(p); err != nil {
		return "", errdefs.NotFoundf("job %q has no artifacts (none were packed, or they expired)", id)
	}
	return p, nil
}

// Diff returns the tenant's job id's changes.patch, from its artifacts.
// The caller closes it. A job whose workspace was no git repository has
// none (ErrNotFound).
func (m *Manager) Diff(ctx context.Context, tenantID, id string) (io.ReadCloser, error) {
	p, err := m.Artifacts(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	z, err := zip.OpenReader(p)
	if err != nil {
		return nil, fmt.Errorf("jobs: artifacts of %s: %w", id, err)
	}
	rc, err := z.Open(patchEntry)
	if err != nil {
		z.Close()
		return nil, errdefs.NotFoundf("job %q has no diff: its workspace was not a git repository", id)
	}
	return &zipEntry{ReadCloser: rc, z: z}, nil
}

// zipEntry is an open zip member that closes its archive with it.
type zipEntry struct {
	io.ReadCloser
	z *zip.ReadCloser
}

func (e *zipEntry) Close() error { return errors.Join(e.ReadCloser.Close(), e.z.Close()) }

// sweepArtifacts deletes zips older than Retention, and temporary files
// a crash left behind a day ago.
func (m *Manager) sweepArtifacts(now time.Time) {
	entries, err := os.ReadDir(m.opts.ArtifactsDir)
	if err != nil {
		m.log.Warn("jobs: artifact retention", "err", err)
		return
	}
	for _, e := range entries {
		name := e.Name()
		keep := m.opts.Retention
		switch {
		case strings.Contains(name, ".zip.tmp-"):
			keep = 24 * time.Hour
		case !strings.HasSuffix(name, ".zip"):
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < keep {
			continue
		}
		if err := os.Remove(filepath.Join(m.opts.ArtifactsDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("jobs: artifact retention", "file", name, "err", err)
		}
	}
}
