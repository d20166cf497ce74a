package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// DefaultMaxResults is Search's limit when the request sets none.
	DefaultMaxResults = 1000
	// MaxResults is the hard cap on Search's limit.
	MaxResults = 10000
	// maxSearchLine is the longest line Search matches; longer lines
	// (minified code, data) are skipped.
	maxSearchLine = 64 << 10
	// maxMatchText is the longest text a match carries: a window of the
	// line around the match.
	maxMatchText = 512
	// binarySniff is how much of a file is checked for a NUL byte.
	binarySniff = 8 << 10
	// maxGlobStars bounds the `**` segments in a glob, and so the
	// backtracking they cost.
	maxGlobStars = 4
)

// readerPool holds the line readers of Search, one per file searched.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxSearchLine) }}

// skipDirs are never searched: version-control internals.
var skipDirs = map[string]bool{".git": true, ".hg": true, ".svn": true}

// Search finds the lines matching req.Pattern (RE2) in the files under
// req.Path (a directory, walked without following symlinks, or one file).
// Files whose first 8 KiB hold a NUL byte are binary and skipped, as are
// lines over 64 KiB and version-control directories (.git, .hg, .svn).
// Glob, when set, keeps the files whose base name or path relative to
// req.Path matches it (path.Match syntax plus `**` for any number of
// directories). There is one match per line, at its first occurrence;
// Column is a 1-based byte offset. At most MaxResults matches (default
// DefaultMaxResults, capped at MaxResults) are returned; Truncated says
// more existed.
func (r *Root) Search(ctx context.Context, req sandboxapi.SearchRequest) (sandboxapi.SearchResult, error) {
	res := sandboxapi.SearchResult{Matches: []sandboxapi.SearchMatch{}}
	if req.Pattern == "" {
		return res, errdefs.Invalidf("pattern is required")
	}
	re, err := regexp.Compile(req.Pattern)
	if err != nil {
		return res, errdefs.Wrap(errdefs.ErrInvalid, err, "invalid pattern: "+err.Error())
	}
	if err := checkGlob(req.Glob); err != nil {
		return res, err
	}
	limit := req.MaxResults
	switch {
	case limit < 0:
		return res, errdefs.Invalidf("max_results must not be negative")
	case limit == 0:
		limit = DefaultMaxResults
	case limit > MaxResults:
		limit = MaxResults
	}
	name, err := r.resolve(req.Path, true)
	if err != nil {
		return res, err
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return res, mapErr(req.Path, err)
	}
	s := &searcher{re: re, glob: req.Glob, limit: limit, res: &res}
	top := clean(req.Path)
	if !fi.IsDir() {
		dir, base := splitName(name)
		parent, err := r.root.OpenRoot(dir)
		if err != nil {
			return res, mapErr(req.Path, err)
		}
		defer parent.Close()
		if s.glob == "" || matchGlob(s.glob, base) {
			err = s.file(parent, base, top)
		}
		if errors.Is(err, errLimit) {
			err = nil
		}
		return res, err
	}
	sub, err := r.root.OpenRoot(name)
	if err != nil {
		return res, mapErr(req.Path, err)
	}
	defer sub.Close()
	err = walk(ctx, sub, "", func(e entry) error {
		switch {
		case e.info.IsDir():
			if skipDirs[e.name] {
				return errSkipDir
			}
			return nil
		case !e.info.Mode().IsRegular():
			return nil
		case s.glob != "" && !matchGlob(s.glob, e.rel):
			return nil
		}
		return s.file(e.dir, e.name, join(top, e.rel))
	})
	if errors.Is(err, errLimit) {
		err = nil
	}
	return res, err
}

// errLimit stops the walk once the result is full.
var errLimit = errors.New("files: search result limit reached")

type searcher struct {
	re    *regexp.Regexp
	glob  string
	limit int
	res   *sandboxapi.SearchResult
}

// file searches one regular file, name in dir, reported as sandbox path p.
func (s *searcher) file(dir *os.Root, name, p string) error {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return skipVanished(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	br := readerPool.Get().(*bufio.Reader)
	defer readerPool.Put(br)
	br.Reset(f)
	head, _ := br.Peek(binarySniff)
	if bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull { // a huge line: skip it whole
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return nil
			}
			continue
		}
		if len(line) > 0 {
			if loc := s.re.FindIndex(trimEOL(line)); loc != nil {
				if len(s.res.Matches) >= s.limit {
					s.res.Truncated = true
					return errLimit
				}
				s.res.Matches = append(s.res.Matches, sandboxapi.SearchMatch{
					Path: p, Line: lineNo, Column: loc[0] + 1, Text: matchText(trimEOL(line), loc[0]),
				})
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // unreadable from here on: keep what was found
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// matchText returns line, or for a long line a window of maxMatchText
// bytes around the match at byte off, cut at rune boundaries and valid
// UTF-8.
func matchText(line []byte, off int) string {
	if len(line) > maxMatchText {
		start := max(0, off-maxMatchText/4)
		end := min(len(line), start+maxMatchText)
		for start > 0 && !utf8.RuneStart(line[start]) {
			start--
		}
		for end < len(line) && !utf8.RuneStart(line[end]) {
			end--
		}
		line = line[start:end]
	}
	return strings.ToValidUTF8(string(line), "\uFFFD")
}

// checkGlob validates a search glob.
func checkGlob(g string) error {
	if g == "" {
		return nil
	}
	stars := 0
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			stars++
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return errdefs.Invalidf("glob %q is malformed", g)
		}
	}
	if stars > maxGlobStars {
		return errdefs.Invalidf("glob %q has more than %d ** segments", g, maxGlobStars)
	}
	return nil
}

// matchGlob reports whether rel (slash-separated, relative to the search
// root) or its base name matches glob.
func matchGlob(glob, rel string) bool {
	if ok, _ := path.Match(glob, path.Base(rel)); ok {
		return true
	}
	return matchSegments(strings.Split(glob, "/"), strings.Split(rel, "/"))
}

// matchSegments matches path segments against glob segments, `**`
// standing for zero or more segments.
func matchSegments(glob, parts []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchSegments(glob[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(glob[0], parts[0]); !ok {
			return false
		}
		glob, parts = glob[1:], parts[1:]
	}
	return len(parts) == 0
}
