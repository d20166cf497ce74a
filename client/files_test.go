package client_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

func TestFilesRoundTrip(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 20*time.Second)
		big := make([]byte, 3<<20+17)
		rand.Read(big)

		// Write through a pipe: the body has no length and must stream.
		pr, pw := io.Pipe()
		go func() {
			for chunk := range slices.Chunk(big, 64<<10) {
				pw.Write(chunk)
			}
			pw.Close()
		}()
		fi, err := d.c.WriteFile(ctx, "/work/sub/big.bin", pr, 0o640)
		if err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if fi.Size != int64(len(big)) || fi.Type != sandboxapi.FileTypeFile || fi.Mode != "0640" || fi.Name != "big.bin" {
			t.Errorf("WriteFile() = %+v; want a file of %d bytes, mode 0640, name big.bin", fi, len(big))
		}
		if st, err := os.Stat(filepath.Join(d.Root, "work/sub/big.bin")); err != nil || st.Size() != int64(len(big)) {
			t.Errorf("file on disk: %v, %v; want %d bytes", st, err, len(big))
		}

		body, err := d.c.ReadFile(ctx, "/work/sub/big.bin")
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		got, err := io.ReadAll(body)
		body.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Errorf("ReadFile: %d bytes, %v; want the %d written", len(got), err, len(big))
		}

		ranges := []struct{ off, n int64 }{{0, 10}, {100, 1}, {int64(len(big)) - 5, -1}, {1 << 20, 1 << 20}}
		for _, r := range ranges {
			body, err := d.c.ReadFileRange(ctx, "/work/sub/big.bin", r.off, r.n)
			if err != nil {
				t.Errorf("ReadFileRange(%d, %d): %v", r.off, r.n, err)
				continue
			}
			got, _ := io.ReadAll(body)
			body.Close()
			end := int64(len(big))
			if r.n > 0 {
				end = r.off + r.n
			}
			if !bytes.Equal(got, big[r.off:end]) {
				t.Errorf("ReadFileRange(%d, %d) = %d bytes; want bytes %d..%d", r.off, r.n, len(got), r.off, end)
			}
		}

		if _, err := d.c.WriteFile(ctx, "/work/a.txt", strings.NewReader("alpha\nbeta\nalpha\n"), 0); err != nil {
			t.Fatalf("WriteFile(a.txt): %v", err)
		}
		if _, err := d.c.Mkdir(ctx, "/work/x/y", true); err != nil {
			t.Fatalf("Mkdir: %v", err)
		}
		if _, err := d.c.Mkdir(ctx, "/work/x/y", false); err == nil {
			t.Errorf("Mkdir of an existing directory succeeded; want an error")
		}
		st, err := d.c.Stat(ctx, "/work/x")
		if err != nil || st.Type != sandboxapi.FileTypeDir {
			t.Errorf("Stat(/work/x) = %+v, %v; want a dir", st, err)
		}

		list, err := d.c.List(ctx, "/work", 1)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var names []string
		for _, e := range list.Entries {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		if want := []string{"a.txt", "sub", "x"}; !slices.Equal(names, want) {
			t.Errorf("List(/work, 1) names = %v; want %v", names, want)
		}
		deep, err := d.c.List(ctx, "/work", 3)
		if err != nil || len(deep.Entries) != 5 || deep.Truncated { // a.txt sub sub/big.bin x x/y
			t.Errorf("List(/work, 3) = %+v, %v; want 5 entries", deep, err)
		}

		sr, err := d.c.Search(ctx, sandboxapi.SearchRequest{Path: "/work", Pattern: "^alp", Glob: "*.txt"})
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		if len(sr.Matches) != 2 || sr.Matches[0].Line != 1 || sr.Matches[1].Line != 3 || sr.Matches[0].Text != "alpha" {
			t.Errorf("Search = %+v; want alpha at lines 1 and 3", sr.Matches)
		}

		if _, err := d.c.Edit(ctx, sandboxapi.EditRequest{Path: "/work/a.txt", OldText: "alpha", NewText: "gamma"}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("ambiguous Edit: %v; want ErrConflict", err)
		}
		er, err := d.c.Edit(ctx, sandboxapi.EditRequest{Path: "/work/a.txt", OldText: "alpha", NewText: "gamma", ReplaceAll: true})
		if err != nil || er.Replacements != 2 {
			t.Errorf("Edit(replace all) = %+v, %v; want 2 replacements", er, err)
		}

		if fi, err := d.c.Move(ctx, "/work/a.txt", "/work/x/b.txt", false); err != nil || fi.Name != "b.txt" {
			t.Fatalf("Move = %+v, %v; want b.txt", fi, err)
		}
		if _, err := d.c.WriteFile(ctx, "/work/c.txt", strings.NewReader("c"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.Move(ctx, "/work/c.txt", "/work/x/b.txt", false); !errors.Is(err, client.ErrConflict) {
			t.Errorf("Move onto an existing file: %v; want ErrConflict", err)
		}
		body, err = d.c.ReadFile(ctx, "/work/x/b.txt")
		if err != nil {
			t.Fatalf("ReadFile(moved): %v", err)
		}
		got, _ = io.ReadAll(body)
		body.Close()
		if string(got) != "gamma\nbeta\ngamma\n" {
			t.Errorf("moved file = %q; want the edited text", got)
		}

		if err := d.c.DeleteFile(ctx, "/work/x", false); err == nil {
			t.Errorf("DeleteFile(non-empty dir) without recursive succeeded")
		}
		if err := d.c.DeleteFile(ctx, "/work/x", true); err != nil {
			t.Errorf("DeleteFile(recursive): %v", err)
		}
		if _, err := d.c.Stat(ctx, "/work/x"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("Stat after delete: %v; want ErrNotFound", err)
		}
	})
}

func TestFilesErrors(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		if err := os.Symlink("/etc", filepath.Join(d.Root, "escape")); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			call func() error
			want error
		}{
			{"missing", func() error { _, err := d.c.ReadFile(ctx, "/nope"); return err }, client.ErrNotFound},
			{"dotdot", func() error { _, err := d.c.ReadFile(ctx, "/../../etc/passwd"); return err }, client.ErrForbidden},
			{"symlink escape", func() error { _, err := d.c.ReadFile(ctx, "/escape/passwd"); return err }, client.ErrForbidden},
			{"write through symlink", func() error {
				_, err := d.c.WriteFile(ctx, "/escape/x", strings.NewReader("x"), 0)
				return err
			}, client.ErrForbidden},
			{"read a directory", func() error { _, err := d.c.ReadFile(ctx, "/"); return err }, client.ErrInvalid},
		}
		for _, tt := range tests {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
			}
		}
	})
}

func TestArchives(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		files := map[string]string{"a.txt": "A", "dir/b.txt": "BB"}
		var tgz bytes.Buffer
		gz := gzip.NewWriter(&tgz)
		tw := tar.NewWriter(gz)
		for _, name := range []string{"a.txt", "dir/b.txt"} {
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
			tw.Write([]byte(files[name]))
		}
		tw.Close()
		gz.Close()
		res, err := d.c.UploadArchive(ctx, "/proj", bytes.NewReader(tgz.Bytes()))
		if err != nil {
			t.Fatalf("UploadArchive: %v", err)
		}
		if res.Entries < 2 {
			t.Errorf("UploadArchive = %+v; want at least the 2 files", res)
		}
		for name, want := range files {
			got, err := os.ReadFile(filepath.Join(d.Root, "proj", name))
			if err != nil || string(got) != want {
				t.Errorf("extracted %s = %q, %v; want %q", name, got, err, want)
			}
		}

		var evil bytes.Buffer
		tw = tar.NewWriter(&evil)
		tw.WriteHeader(&tar.Header{Name: "../evil.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		if _, err := d.c.UploadArchive(ctx, "/proj", &evil); err == nil {
			t.Errorf("UploadArchive with ../evil.txt succeeded; want a refusal")
		}
		if _, err := os.Stat(filepath.Join(d.Root, "evil.txt")); err == nil {
			t.Errorf("evil.txt was written outside the target")
		}

		for _, format := range []string{client.ArchiveTarGz, client.ArchiveTar, client.ArchiveZip} {
			body, err := d.c.DownloadArchive(ctx, "/proj", format)
			if err != nil {
				t.Errorf("DownloadArchive(%s): %v", format, err)
				continue
			}
			data, err := io.ReadAll(body)
			body.Close()
			if err != nil {
				t.Errorf("DownloadArchive(%s): %v", format, err)
				continue
			}
			got, err := archiveFiles(format, data)
			if err != nil {
				t.Errorf("DownloadArchive(%s): %v", format, err)
				continue
			}
			for name, want := range files {
				if got[name] != want {
					t.Errorf("DownloadArchive(%s)[%s] = %q; want %q (have %v)", format, name, got[name], want, got)
				}
			}
		}
	})
}

// archiveFiles returns the regular files of an archive, by path with any
// leading "./" removed.
func archiveFiles(format string, data []byte) (map[string]string, error) {
	files := map[string]string{}
	if format == client.ArchiveZip {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			files[strings.TrimPrefix(f.Name, "./")] = string(b)
		}
		return files, nil
	}
	var r io.Reader = bytes.NewReader(data)
	if format == client.ArchiveTarGz {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(h.Name, "./")] = string(b)
	}
}

func TestWatch(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		if err := os.MkdirAll(filepath.Join(d.Root, "w/sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		ws, err := d.c.Watch(ctx, "/w", true)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		defer ws.Close()
		if _, err := d.c.WriteFile(ctx, "/w/sub/f.txt", strings.NewReader("x"), 0); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		for {
			ev, err := ws.Next()
			if err != nil {
				t.Fatalf("Watch Next: %v", err)
			}
			if !strings.HasPrefix(ev.Op, "fs.") {
				t.Errorf("watch event op %q; want fs.*", ev.Op)
			}
			if ev.Path == "/w/sub/f.txt" {
				return
			}
		}
	})
}
