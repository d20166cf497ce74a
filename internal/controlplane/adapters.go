package controlplane

import (
	"context"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxes"
)

// jobSandboxes gives the job engine the sandboxes service in the shape
// its consumer-side interface (jobs.Sandboxes) asks for.
type jobSandboxes struct{ svc *sandboxes.Service }

func (j jobSandboxes) Create(ctx context.Context, tenantID string, req cpapi.SandboxRequest, jobID string) (id, runtime string, err error) {
	sb, err := j.svc.Create(ctx, tenantID, req, sandboxes.CreateOptions{JobID: jobID})
	if err != nil {
		return "", "", err
	}
	return sb.ID, sb.Runtime, nil
}

func (j jobSandboxes) Client(ctx context.Context, tenantID, id string) (*client.Client, error) {
	return j.svc.Client(ctx, tenantID, id)
}

func (j jobSandboxes) Alive(ctx context.Context, tenantID, id string) error {
	return j.svc.Alive(ctx, tenantID, id)
}

func (j jobSandboxes) Delete(ctx context.Context, tenantID, id string) error {
	return j.svc.Delete(ctx, tenantID, id)
}
