//go:build !slim

package cli

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

func sandboxCpCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "cp <src> <dst>",
		Short: "Copy a file or directory between here and a sandbox",
		Long: `cp copies one way: one side is a local path, the other <sandbox>:<path>.
A directory travels as a tar.gz archive. As with cp, a destination that is
an existing directory receives the source under its own name. A local "-"
is stdout (a file's bytes, or a directory's tar.gz).

  corral sandbox cp ./src sb_123:/workspace
  corral sandbox cp sb_123:/workspace/dist ./dist`,
		Args: cobra.ExactArgs(2),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			srcID, srcPath, srcRemote := remotePath(args[0])
			dstID, dstPath, dstRemote := remotePath(args[1])
			switch {
			case srcRemote && dstRemote:
				return errors.New("cp: copy through here: one side must be a local path")
			case !srcRemote && !dstRemote:
				return errors.New("cp: one side must be <sandbox>:<path>")
			case dstRemote:
				return upload(ctx, cp.Sandbox(dstID), args[0], dstPath)
			}
			return downloadPath(ctx, cp.Sandbox(srcID), srcPath, args[1], cmd.OutOrStdout())
		}),
	}
	cf.register(cmd, false)
	return cmd
}

// remotePath splits "<sandbox>:<path>". A local path holding a colon can
// be written with a slash before it ("./a:b").
func remotePath(s string) (id, p string, ok bool) {
	id, p, ok = strings.Cut(s, ":")
	if !ok || id == "" || strings.ContainsAny(id, `/\`) {
		return "", s, false
	}
	if !path.IsAbs(p) {
		p = "/" + p // relative to the sandbox root, as docker cp does
	}
	return id, p, true
}

// upload copies the local file or directory src to dst in the sandbox.
func upload(ctx context.Context, c *client.Client, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st, err := c.Stat(ctx, dst); err == nil && st.Type == sandboxapi.FileTypeDir || strings.HasSuffix(dst, "/") {
		dst = path.Join(dst, filepath.Base(filepath.Clean(src)))
	}
	if !fi.IsDir() {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = c.WriteFile(ctx, dst, f, fi.Mode().Perm())
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() { // stops when the archive is written or pr is closed
		defer close(done)
		pw.CloseWithError(writeTarGz(pw, src))
	}()
	_, err = c.UploadArchive(ctx, dst, pr)
	pr.CloseWithError(errors.New("upload ended"))
	<-done
	return err
}

// writeTarGz writes the content of directory dir as a tar.gz stream:
// directories, regular files and symlinks (not followed).
func writeTarGz(w io.Writer, dir string) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !fi.IsDir() && !fi.Mode().IsRegular():
			return nil // devices, sockets, FIFOs
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, h.Size)
		return err
	})
	if err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// downloadPath copies src in the sandbox to the local path dst ("-" for
// out).
func downloadPath(ctx context.Context, c *client.Client, src, dst string, out io.Writer) error {
	st, err := c.Stat(ctx, src)
	if err != nil {
		return err
	}
	isDir := st.Type == sandboxapi.FileTypeDir
	var body io.ReadCloser
	if isDir {
		body, err = c.DownloadArchive(ctx, src, client.ArchiveTarGz)
	} else {
		body, err = c.ReadFile(ctx, src)
	}
	if err != nil {
		return err
	}
	defer body.Close()
	if dst == "-" {
		_, err := io.Copy(out, body)
		return err
	}
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, path.Base(src))
	}
	if isDir {
		return extractTarGz(body, dst)
	}
	if err := download(body, dst, io.Discard); err != nil {
		return err
	}
	if mode, err := strconv.ParseUint(st.Mode, 8, 32); err == nil {
		return os.Chmod(dst, fs.FileMode(mode).Perm())
	}
	return nil
}

// extractTarGz unpacks a tar.gz stream into directory dir, creating it.
// Every write goes through an os.Root on dir, so no entry, nor a symlink
// an earlier entry made, can place anything outside it.
func extractTarGz(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("extract into %s: %w", dir, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("extract into %s: %w", dir, err)
		}
		if err := extractEntry(root, h, tr); err != nil {
			return fmt.Errorf("extract %s into %s: %w", h.Name, dir, err)
		}
	}
}

func extractEntry(root *os.Root, h *tar.Header, r io.Reader) error {
	name := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if name == "." {
		return nil
	}
	if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return errors.New("the entry leaves the destination")
	}
	perm := fs.FileMode(h.Mode).Perm()
	if parent := path.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, perm|0o700); err != nil {
			return err
		}
		return root.Chmod(name, perm|0o700)
	case tar.TypeReg:
		_ = root.Remove(name) // replace, never write through a link
		f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		_ = root.Remove(name)
		return root.Symlink(h.Linkname, name)
	}
	return nil // other types are left out
}
