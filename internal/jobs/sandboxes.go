package jobs

import (
	"context"
	"errors"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Sandboxes is what the job engine needs of the sandbox service
// (internal/sandboxes): one sandbox per job, a client for its daemon, a
// liveness probe and removal. Every method is scoped to a tenant; another
// tenant's sandbox is errdefs.ErrNotFound.
type Sandboxes interface {
	// Create starts a sandbox for job jobID and returns its id and the
	// runtime it runs on once its sandboxd is healthy. Errors of class ErrInvalid, ErrNotFound,
	// ErrForbidden, ErrTooLarge or ErrUnprocessable are the request's fault
	// and are not retried; any other is an infrastructure failure.
	Create(ctx context.Context, tenantID string, req cpapi.SandboxRequest, jobID string) (id, runtime string, err error)
	// Client returns a client for the sandbox's daemon.
	Client(ctx context.Context, tenantID, id string) (*client.Client, error)
	// Alive returns nil if the sandbox's daemon answers, an error of class
	// ErrTimeout if it did not answer in time while its runtime still runs
	// the sandbox (slow, not gone), and any other error if it is gone.
	Alive(ctx context.Context, tenantID, id string) error
	// Delete removes the sandbox; removing one that is gone succeeds.
	Delete(ctx context.Context, tenantID, id string) error
}

// permanent reports whether a sandbox creation error is the request's fault,
// so retrying cannot help.
func permanent(err error) bool {
	for _, class := range []error{errdefs.ErrInvalid, errdefs.ErrNotFound, errdefs.ErrForbidden,
		errdefs.ErrTooLarge, errdefs.ErrUnprocessable, errdefs.ErrUnauthorized} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// safeMessage is what a user may read about err in the job's log: the
// client-safe message of an errdefs error, else fallback. The cause is
// logged, not stored.
func safeMessage(err error, fallback string) string {
	var e *errdefs.Error
	if errors.As(err, &e) {
		return fallback + ": " + e.Msg
	}
	return fallback
}
