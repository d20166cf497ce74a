package bwrap

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// has reports whether args holds the flag followed by its values.
func has(args []string, flag ...string) bool {
	for i := range args {
		if len(args)-i >= len(flag) && slices.Equal(args[i:i+len(flag)], flag) {
			return true
		}
	}
	return false
}

func TestArgs(t *testing.T) {
	rootfs := t.TempDir()
	for _, d := range []string{"usr/bin", "etc", "proc", "home/agent", "workspace", "var/tmp"} {
		os.MkdirAll(filepath.Join(rootfs, d), 0o755)
	}
	os.Symlink("usr/bin", filepath.Join(rootfs, "bin"))
	os.WriteFile(filepath.Join(rootfs, "etc", "resolv.conf"), nil, 0o644)
	state := &hoststate.Sandbox{Path: "/state/sb_x"}
	tests := []struct {
		name    string
		spec    runtime.Spec
		rootfs  string
		want    [][]string
		notWant [][]string
	}{
		{
			name:   "defaults",
			spec:   runtime.Spec{Network: runtime.NetworkNone},
			rootfs: rootfs,
			want: [][]string{
				{"--unshare-net"}, {"--uid", "1000", "--gid", "1000"}, {"--cap-drop", "ALL"},
				{"--ro-bind", rootfs + "/usr", "/usr"}, {"--symlink", "usr/bin", "/bin"},
				{"--bind", "/state/sb_x/sock", "/run/corral"}, {"--bind", "/ws", "/workspace"},
				{"--ro-bind", "/bin/corral", "/.corral/bin/corral"}, {"--perms", "1777", "--tmpfs", "/var/tmp"},
				{"--remount-ro", "/", "--chdir", "/workspace"},
				{"--", "/.corral/bin/corral", "sandboxd", "--listen", "unix:/run/corral/sandboxd.sock"},
			},
			notWant: [][]string{{"--ro-bind", rootfs + "/proc", "/proc"}, {"--ro-bind", rootfs + "/home", "/home"}, {"--die-with-parent"}, {"--size"}},
		},
		{
			name:    "egress with a disk limit",
			spec:    runtime.Spec{Network: runtime.NetworkEgress, Resources: runtime.Resources{DiskMB: 10}},
			rootfs:  rootfs,
			want:    [][]string{{"--perms", "0755", "--size", "10485760", "--tmpfs", "/workspace"}, {"--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"}},
			notWant: [][]string{{"--unshare-net"}, {"--bind", "/ws", "/workspace"}},
		},
		{
			name: "host template",
			spec: runtime.Spec{Network: runtime.NetworkNone},
			want: [][]string{{"--ro-bind", "/usr", "/usr"}, {"--ro-bind", "/etc", "/etc"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &launch{id: "sb_x", spec: tt.spec, rootfs: tt.rootfs, state: state, home: "/home-dir", binary: "/bin/corral"}
			if tt.spec.Resources.DiskMB == 0 {
				l.workspace = "/ws"
			}
			args, err := l.args()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !has(args, w...) {
					t.Errorf("args lack %q:\n%s", w, strings.Join(args, " "))
				}
			}
			for _, w := range tt.notWant {
				if has(args, w...) {
					t.Errorf("args hold %q:\n%s", w, strings.Join(args, " "))
				}
			}
		})
	}
}

func TestEnvAndHostname(t *testing.T) {
	got := env(runtime.Spec{Env: map[string]string{"A": "1", "HOME": "/elsewhere", runtime.TokenEnv: "spoof"}}, "tok")
	for _, want := range []string{"A=1", "HOME=/elsewhere", runtime.TokenEnv + "=tok", "USER=agent"} {
		if !slices.Contains(got, want) {
			t.Errorf("env lacks %q: %q", want, got)
		}
	}
	for _, v := range got {
		if strings.HasPrefix(v, runtime.TokenEnv+"=spoof") {
			t.Errorf("the spec overrode the token: %q", got)
		}
	}
	if h := hostname(strings.Repeat("a", 63)); len(h) > 64 {
		t.Errorf("hostname of a long id is %d bytes; want at most 64", len(h))
	}
}

func TestReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other owners")
	}
	d := t.TempDir() // 0700, owned by root
	f := filepath.Join(d, "f")
	os.WriteFile(f, nil, 0o644)
	if err := reachable(f, 1000, 1000); err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Errorf("reachable(file under a 0700 root dir, uid 1000) = %v; want an error naming the dir", err)
	}
	if err := reachable(f, 0, 0); err != nil {
		t.Errorf("reachable(..., root) = %v", err)
	}
	os.Chmod(filepath.Dir(d), 0o711)
	os.Chmod(d, 0o711)
	if err := reachable(f, 1000, 1000); err != nil {
		t.Errorf("reachable after chmod 711 = %v", err)
	}
	os.Chmod(f, 0o600)
	if err := reachable(f, 1000, 1000); err == nil {
		t.Errorf("reachable(0600 root file, uid 1000) = nil; want an error")
	}
}

func TestSeedDir(t *testing.T) {
	src := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(filepath.Join(src, ".config", "x"), 0o700)
	os.WriteFile(filepath.Join(src, ".bashrc"), []byte("PS1=x"), 0o644)
	os.Symlink(".bashrc", filepath.Join(src, ".profile"))
	dst := filepath.Join(t.TempDir(), "seeded")
	if err := seedDir(src, dst, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, ".profile")); string(b) != "PS1=x" {
		t.Errorf("seeded .profile -> .bashrc reads %q", b)
	}
	if fi, err := os.Stat(filepath.Join(dst, ".config", "x")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("seeded dir: %v, %v", fi, err)
	}
	if err := seedDir(filepath.Join(src, "missing"), filepath.Join(t.TempDir(), "empty"), 1000, 1000); err != nil {
		t.Errorf("seedDir(missing source) = %v; want an empty dir", err)
	}
}

func writeTar(t *testing.T, files map[string]string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rootfs.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := tar.NewWriter(f)
	for name, body := range files {
		w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		w.Write([]byte(body))
	}
	w.Close()
	f.Close()
	return p
}

func TestImportTemplate(t *testing.T) {
	dir := t.TempDir()
	r := &Runtime{cfg: Config{TemplatesDir: dir}}
	ctx := context.Background()
	if has, err := r.HasTemplate(ctx, "mini"); has || err != nil {
		t.Fatalf("HasTemplate before import = %v, %v", has, err)
	}
	if err := r.ImportTemplate(ctx, writeTar(t, map[string]string{"etc/version": "1"}), "mini"); err != nil {
		t.Fatalf("ImportTemplate: %v", err)
	}
	if err := r.ImportTemplate(ctx, writeTar(t, map[string]string{"etc/version": "2"}), "mini"); err != nil {
		t.Fatalf("ImportTemplate again: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mini", "rootfs", "etc", "version")); string(b) != "2" {
		t.Errorf("template after a re-import holds %q; want the new one", b)
	}
	if b, err := r.TemplateBuild(ctx, "mini"); err != nil || b == "" {
		t.Errorf("TemplateBuild after import = %q, %v", b, err)
	}
	if has, err := r.HasTemplate(ctx, "mini"); !has || err != nil {
		t.Errorf("HasTemplate after import = %v, %v", has, err)
	}
	if err := r.ImportTemplate(ctx, filepath.Join(dir, "no.tar"), "broken"); err == nil {
		t.Errorf("ImportTemplate(missing tarball) = nil")
	}
	for _, name := range []string{"host", "../x", "A"} {
		if err := r.ImportTemplate(ctx, "x.tar", name); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("ImportTemplate(%q) = %v; want invalid", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "mini" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("templates dir holds %q; want only mini (no temporary leftovers)", names)
	}
}
