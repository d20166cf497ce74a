package files

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Format is an archive format of Pack.
type Format string

// The archive formats.
const (
	FormatTarGz Format = "tar.gz"
	FormatTar   Format = "tar"
	FormatZip   Format = "zip"
)

// ParseFormat parses an archive format name; "" is FormatTarGz.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "":
		return FormatTarGz, nil
	case FormatTarGz, FormatTar, FormatZip:
		return f, nil
	case "tgz":
		return FormatTarGz, nil
	}
	return "", errdefs.Invalidf("format %q is not one of tar.gz, tar, zip", s)
}

// ContentType is the media type of an archive in format f.
func (f Format) ContentType() string {
	switch f {
	case FormatZip:
		return "application/zip"
	case FormatTar:
		return "application/x-tar"
	}
	return "application/gzip"
}

// Pack is a directory or file ready to be streamed as an archive. It holds
// the directory open, so the tree it streams is the one Pack found even if
// the path is renamed meanwhile.
type Pack struct {
	format Format
	dir    *os.Root // the directory packed, or the one holding the file
	file   string   // when a single file is packed: its name in dir
	base   string   // the base name of what is packed, for a file name
}

// Pack opens the directory or regular file at sandbox path p (a symlink is
// followed) for streaming in format f. The caller closes the Pack.
func (r *Root) Pack(p string, f Format) (*Pack, error) {
	name, err := r.resolve(p, true)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return nil, mapErr(p, err)
	}
	pk := &Pack{format: f, base: path.Base(clean(p))}
	if pk.base == "/" {
		pk.base = "root"
	}
	switch {
	case fi.IsDir():
		pk.dir, err = r.root.OpenRoot(name)
	case fi.Mode().IsRegular():
		dir, base := splitName(name)
		pk.file = base
		pk.dir, err = r.root.OpenRoot(dir)
	default:
		return nil, errdefs.Invalidf("%s is neither a directory nor a regular file", quote(p))
	}
	if err != nil {
		return nil, mapErr(p, err)
	}
	return pk, nil
}

// FileName is a suggested name for the archive ("src.tar.gz").
func (pk *Pack) FileName() string { return pk.base + "." + string(pk.format) }

// Close releases the Pack.
func (pk *Pack) Close() error { return pk.dir.Close() }

// Stream writes the archive to w. Directories, regular files and symlinks
// (stored as symlinks, never followed) are included; sockets, devices and
// FIFOs are left out, as are entries that vanish or are unreadable during
// the walk. An error means w received a partial archive.
func (pk *Pack) Stream(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var aw archiveWriter
	switch pk.format {
	case FormatZip:
		zw := zip.NewWriter(bw)
		zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
			return flate.NewWriter(w, flate.BestSpeed)
		})
		aw = &zipWriter{zw}
	case FormatTar:
		aw = &tarWriter{tw: tar.NewWriter(bw)}
	default:
		gz, _ := gzip.NewWriterLevel(bw, gzip.BestSpeed)
		aw = &tarWriter{tw: tar.NewWriter(gz), gz: gz}
	}
	var err error
	if pk.file != "" {
		var fi fs.FileInfo
		if fi, err = pk.dir.Lstat(pk.file); err == nil {
			err = addEntry(aw, entry{rel: pk.base, dir: pk.dir, name: pk.file, info: fi})
		}
	} else {
		err = walk(ctx, pk.dir, "", func(e entry) error { return addEntry(aw, e) })
	}
	if err != nil {
		return fmt.Errorf("files: packing: %w", err)
	}
	if err := aw.Close(); err != nil {
		return fmt.Errorf("files: packing: %w", err)
	}
	return bw.Flush()
}

// addEntry adds one walked entry to aw.
func addEntry(aw archiveWriter, e entry) error {
	switch e.info.Mode().Type() {
	case fs.ModeDir:
		return aw.Dir(e.rel+"/", e.info)
	case fs.ModeSymlink:
		target, err := e.dir.Readlink(e.name)
		if err != nil {
			return skipVanished(err)
		}
		return aw.Symlink(e.rel, e.info, target)
	case 0:
		f, err := e.dir.OpenFile(e.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return skipVanished(err)
		}
		defer f.Close()
		fi, err := f.Stat() // the size of what is open, not of what was listed
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		return aw.File(e.rel, fi, f)
	}
	return nil
}

func skipVanished(err error) error {
	if skippable(err) {
		return nil
	}
	return err
}

// archiveWriter is what Stream needs of a format.
type archiveWriter interface {
	Dir(name string, fi fs.FileInfo) error
	File(name string, fi fs.FileInfo, r io.Reader) error
	Symlink(name string, fi fs.FileInfo, target string) error
	Close() error
}

type tarWriter struct {
	tw *tar.Writer
	gz *gzip.Writer // nil for plain tar
}

func (t *tarWriter) header(name string, fi fs.FileInfo, link string) error {
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	h.Name = name
	h.Uname, h.Gname = "", "" // numeric ids only: names belong to this sandbox's passwd
	return t.tw.WriteHeader(h)
}

func (t *tarWriter) Dir(name string, fi fs.FileInfo) error { return t.header(name, fi, "") }

func (t *tarWriter) Symlink(name string, fi fs.FileInfo, target string) error {
	return t.header(name, fi, target)
}

func (t *tarWriter) File(name string, fi fs.FileInfo, r io.Reader) error {
	if err := t.header(name, fi, ""); err != nil {
		return err
	}
	// The header promised fi.Size() bytes: a file that shrank fails here
	// rather than produce a corrupt archive.
	_, rerr, werr := copyBuffered(t.tw, io.LimitReader(r, fi.Size()))
	if rerr != nil {
		return rerr
	}
	return werr
}

func (t *tarWriter) Close() error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	if t.gz != nil {
		return t.gz.Close()
	}
	return nil
}

type zipWriter struct{ zw *zip.Writer }

func (z *zipWriter) create(name string, fi fs.FileInfo, method uint16) (io.Writer, error) {
	h, err := zip.FileInfoHeader(fi)
	if err != nil {
		return nil, err
	}
	h.Name = name
	h.Method = method
	return z.zw.CreateHeader(h)
}

func (z *zipWriter) Dir(name string, fi fs.FileInfo) error {
	_, err := z.create(name, fi, zip.Store)
	return err
}

func (z *zipWriter) Symlink(name string, fi fs.FileInfo, target string) error {
	w, err := z.create(name, fi, zip.Store)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, target) // zip's convention: the target is the content
	return err
}

func (z *zipWriter) File(name string, fi fs.FileInfo, r io.Reader) error {
	w, err := z.create(name, fi, zip.Deflate)
	if err != nil {
		return err
	}
	_, rerr, werr := copyBuffered(w, io.LimitReader(r, fi.Size()))
	if rerr != nil {
		return rerr
	}
	return werr
}

func (z *zipWriter) Close() error { return z.zw.Close() }
