package docker

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestImportTemplate imports a tiny gzipped rootfs and checks the image's
// name and settings.
func TestImportTemplate(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	const name = "corral-test-tiny" // tagged :latest by ImportTemplate
	if ok, err := r.HasTemplate(ctx, name); err != nil || ok {
		t.Fatalf("HasTemplate(%q) before import = %v, %v; want false", name, ok, err)
	}
	tarball := filepath.Join(t.TempDir(), "rootfs.tar.gz")
	writeRootfs(t, tarball, map[string]string{"etc/passwd": "agent:x:1000:1000::/home/agent:/bin/sh\n", "workspace/": ""})
	if err := r.ImportTemplate(ctx, tarball, name); err != nil {
		t.Fatalf("ImportTemplate: %v", err)
	}
	t.Cleanup(func() { r.cli.ImageRemove(ctx, name+":latest", client.ImageRemoveOptions{Force: true}) })
	if ok, err := r.HasTemplate(ctx, name+":latest"); err != nil || !ok {
		t.Fatalf("HasTemplate(%q) after import = %v, %v; want true", name, ok, err)
	}
	if b, err := r.TemplateBuild(ctx, name); err != nil || b != "rootfs" {
		t.Errorf("TemplateBuild = %q, %v; want rootfs (the tarball's build)", b, err)
	}
	img, err := r.cli.ImageInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := img.Config
	if cfg.User != "1000:1000" || cfg.WorkingDir != "/workspace" || !slices.Contains(cfg.Env, "HOME=/home/agent") {
		t.Errorf("image config: user %q, workdir %q, env %v; want 1000:1000, /workspace, HOME=/home/agent", cfg.User, cfg.WorkingDir, cfg.Env)
	}
	if err := r.ImportTemplate(ctx, filepath.Join(t.TempDir(), "missing.tar"), name); err == nil {
		t.Errorf("ImportTemplate of a missing file succeeded")
	}
}

// writeRootfs writes a gzipped tar of files (a name ending in "/" is a
// directory).
func writeRootfs(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Now()}
		if name[len(name)-1] == '/' {
			h = &tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeDir, Uid: 1000, Gid: 1000, ModTime: time.Now()}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}
