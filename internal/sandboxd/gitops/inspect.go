package gitops

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Limits of the read-only commands.
const (
	// MaxStatusFiles caps GitStatus.Files.
	MaxStatusFiles = 10000
	// maxStatusOutput is how much of git status is read.
	maxStatusOutput = 16 << 20
	// DefaultLogLimit and MaxLogLimit bound GET /v1/git/log.
	DefaultLogLimit = 50
	MaxLogLimit     = 1000
)

// Status describes the repository at path p: branch, head, upstream
// distance and every changed or untracked file.
func (s *Service) Status(ctx context.Context, p string, timeoutMS int64) (sandboxapi.GitStatus, error) {
	var st sandboxapi.GitStatus
	t, err := timeout(timeoutMS, DefaultLocalTimeout)
	if err != nil {
		return st, err
	}
	r, err := s.open(p)
	if err != nil {
		return st, err
	}
	// An untracked tree of build output can list more files than anyone
	// reads: past maxStatusOutput the list is cut, not refused.
	cut := false
	out, err := s.local(ctx, r, gitCmd{
		args:    []string{"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"},
		timeout: t, readOnly: true, maxOut: maxStatusOutput, truncated: func() { cut = true },
	})
	if err != nil {
		return st, err
	}
	if cut {
		out = out[:strings.LastIndexByte(out, 0)+1] // the last record may be partial
	}
	st = parseStatus(out)
	st.Truncated = st.Truncated || cut
	st.Path = r.path
	return st, nil
}

// parseStatus reads `git status --porcelain=v2 --branch -z`.
func parseStatus(out string) sandboxapi.GitStatus {
	st := sandboxapi.GitStatus{Files: []sandboxapi.GitFileStatus{}}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		line := fields[i]
		if line == "" {
			continue
		}
		if h, ok := strings.CutPrefix(line, "# "); ok {
			key, val, _ := strings.Cut(h, " ")
			switch key {
			case "branch.oid":
				if val != "(initial)" {
					st.Head = val
				}
			case "branch.head":
				if val != "(detached)" {
					st.Branch = val
				}
			case "branch.upstream":
				st.Upstream = val
			case "branch.ab":
				for f := range strings.FieldsSeq(val) { // "+1 -2"
					n, _ := strconv.Atoi(f[1:])
					if f[0] == '+' {
						st.Ahead = n
					} else {
						st.Behind = n
					}
				}
			}
			continue
		}
		var f sandboxapi.GitFileStatus
		switch line[0] {
		case '1': // 1 XY sub mH mI mW hH hI path
			parts := strings.SplitN(line, " ", 9)
			if len(parts) < 9 {
				continue
			}
			f = sandboxapi.GitFileStatus{Path: parts[8], Index: change(parts[1][0]), Worktree: change(parts[1][1])}
		case '2': // 2 XY sub mH mI mW hH hI Xscore path, then origPath
			parts := strings.SplitN(line, " ", 10)
			if len(parts) < 10 {
				continue
			}
			f = sandboxapi.GitFileStatus{Path: parts[9], Index: change(parts[1][0]), Worktree: change(parts[1][1])}
			if i+1 < len(fields) {
				i++
				f.OrigPath = fields[i]
			}
		case 'u': // u XY sub m1 m2 m3 mW h1 h2 h3 path
			parts := strings.SplitN(line, " ", 11)
			if len(parts) < 11 {
				continue
			}
			f = sandboxapi.GitFileStatus{Path: parts[10], Index: sandboxapi.GitUnmerged, Worktree: sandboxapi.GitUnmerged}
		case '?':
			f = sandboxapi.GitFileStatus{Path: line[2:], Worktree: sandboxapi.GitUntracked}
		default:
			continue
		}
		if len(st.Files) >= MaxStatusFiles {
			st.Truncated = true
			continue
		}
		st.Files = append(st.Files, f)
	}
	st.Clean = len(st.Files) == 0
	return st
}

// change names a porcelain status letter.
func change(c byte) string {
	switch c {
	case 'M':
		return sandboxapi.GitModified
	case 'A':
		return sandboxapi.GitAdded
	case 'D':
		return sandboxapi.GitDeleted
	case 'R':
		return sandboxapi.GitRenamed
	case 'C':
		return sandboxapi.GitCopied
	case 'T':
		return sandboxapi.GitTypeChanged
	case 'U':
		return sandboxapi.GitUnmerged
	}
	return ""
}

// Branches lists the local branches of the repository at p, and with all
// the remote-tracking ones too.
func (s *Service) Branches(ctx context.Context, p string, all bool, timeoutMS int64) (sandboxapi.GitBranchList, error) {
	list := sandboxapi.GitBranchList{Branches: []sandboxapi.GitBranch{}}
	t, err := timeout(timeoutMS, DefaultLocalTimeout)
	if err != nil {
		return list, err
	}
	r, err := s.open(p)
	if err != nil {
		return list, err
	}
	args := []string{"for-each-ref", "--format=%(refname)%00%(objectname)%00%(upstream:short)%00%(HEAD)", "refs/heads"}
	if all {
		args = append(args, "refs/remotes")
	}
	out, err := s.git(ctx, r, t, true, args...)
	if err != nil {
		return list, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Split(line, "\x00")
		if len(f) != 4 {
			continue
		}
		b := sandboxapi.GitBranch{Head: f[1], Upstream: f[2], Current: f[3] == "*"}
		if name, ok := strings.CutPrefix(f[0], "refs/heads/"); ok {
			b.Name = name
		} else if name, ok := strings.CutPrefix(f[0], "refs/remotes/"); ok && !strings.HasSuffix(name, "/HEAD") {
			b.Name, b.Remote = name, true
		} else {
			continue
		}
		list.Branches = append(list.Branches, b)
	}
	if list.Current, _, err = s.head(ctx, r, t); err != nil {
		return list, err
	}
	return list, nil
}

// LogOptions select the commits of Log.
type LogOptions struct {
	Path string
	// Ref is where history starts (HEAD when empty); a range such as
	// "main..feature" works too.
	Ref string
	// Limit caps the commits returned: DefaultLogLimit when 0, at most
	// MaxLogLimit.
	Limit     int
	TimeoutMS int64
}

// Log lists commits, newest first. A repository without commits has an
// empty history.
func (s *Service) Log(ctx context.Context, o LogOptions) (sandboxapi.GitLog, error) {
	log := sandboxapi.GitLog{Commits: []sandboxapi.GitCommit{}}
	switch {
	case o.Limit < 0 || o.Limit > MaxLogLimit:
		return log, errdefs.Invalidf("limit must be between 1 and %d", MaxLogLimit)
	case o.Limit == 0:
		o.Limit = DefaultLogLimit
	}
	ref := o.Ref
	if ref == "" {
		ref = "HEAD"
	} else if err := checkRev("ref", ref); err != nil {
		return log, err
	}
	t, err := timeout(o.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return log, err
	}
	r, err := s.open(o.Path)
	if err != nil {
		return log, err
	}
	out, err := s.git(ctx, r, t, true, "log", "-z", "--no-color", "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%s",
		"-n", strconv.Itoa(o.Limit), "--end-of-options", ref, "--")
	if err != nil {
		if strings.Contains(err.Error(), "unknown revision") || strings.Contains(err.Error(), "bad revision") {
			if o.Ref == "" {
				return log, nil // HEAD is unborn: no commits yet
			}
			return log, errdefs.Unprocessablef("ref %q is not a known revision", o.Ref)
		}
		return log, err
	}
	f := strings.Split(out, "\x00")
	for i := 0; i+6 <= len(f); i += 6 {
		when, _ := time.Parse(time.RFC3339, f[i+4])
		log.Commits = append(log.Commits, sandboxapi.GitCommit{
			SHA: strings.TrimPrefix(f[i], "\n"), Parents: strings.Fields(f[i+1]),
			Author: f[i+2], Email: f[i+3], Time: when, Subject: f[i+5],
		})
	}
	if log.Commits == nil {
		log.Commits = []sandboxapi.GitCommit{}
	}
	return log, nil
}
