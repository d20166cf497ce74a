package forge

import "context"

// session is one call's access to a forge's API, for one repository and
// with the call's token: the requests opening a pull request takes. Its
// methods return the client library's errors; fail turns them into *Error.
type session interface {
	// defaultBranch is the repository's default branch, "" if it has
	// none (it is empty).
	defaultBranch(ctx context.Context) (string, error)
	// create opens a pull request from pr.Head into base.
	create(ctx context.Context, pr PullRequest, base string) (*PR, error)
	// exists reports whether err, create's, is the forge refusing a
	// pull request because one is open for the head already.
	exists(err error) bool
	// findOpen is the pull request open from head into base, nil if none.
	findOpen(ctx context.Context, head, base string) (*PR, error)
	// fail is the *Error for err, an error of the methods above, in doing
	// op ("create pull request on acme/app").
	fail(op string, err error) error
}

// open does what every forge does to open pr on repository name through
// s: it reads the default branch when pr.Base is "", opens the pull
// request, and when one is open for the head already answers that one
// (Existed), so that a job that crashed after opening it can simply try
// again.
func open(ctx context.Context, a api, name string, s session, pr PullRequest) (*PR, error) {
	base := pr.Base
	if base == "" {
		var err error
		if base, err = s.defaultBranch(ctx); err != nil {
			return nil, s.fail("look up "+a.repo+" "+name, err)
		}
		if base == "" {
			return nil, a.noDefaultBranch(name)
		}
	}
	createOp := "create " + a.pr + " on " + name
	created, err := s.create(ctx, pr, base)
	switch {
	case err == nil:
		return created, nil
	case !s.exists(err):
		return nil, s.fail(createOp, err)
	}
	// Open already (a retry after a crash, or a branch pushed again): find
	// it and answer as if created.
	found, ferr := s.findOpen(ctx, pr.Head, base)
	switch {
	case ferr != nil:
		return nil, s.fail("find the open "+a.pr+" for "+pr.Head+" on "+name, ferr)
	case found == nil: // closed in between
		return nil, s.fail(createOp, err)
	}
	found.Existed = true
	return found, nil
}
