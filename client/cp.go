package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-sh/corral/api/cpapi"
)

// ControlPlane talks to Corral's control plane (`corral up`, DESIGN.md §3):
// jobs and their event logs, sandboxes, tokens. Sandbox returns a Client
// for one sandbox's daemon, reached through the control plane's proxy.
//
// A ControlPlane is safe for concurrent use. Errors the server reports
// arrive as *APIError, matched with errors.Is against ErrNotFound,
// ErrUnauthorized and the other classes; another tenant's job or sandbox
// is ErrNotFound.
type ControlPlane struct {
	// c carries the HTTP plumbing; its prefix is the path the API hangs
	// under ("" for a server at the root), its routes the full API paths.
	c *Client
}

// NewControlPlane returns a ControlPlane for the server at baseURL
// ("http://127.0.0.1:7070", or with a path when the server sits behind a
// prefix). The options are the Client's: WithToken for the API token,
// WithHTTPClient for a transport of your own.
func NewControlPlane(baseURL string, opts ...Option) (*ControlPlane, error) {
	c, err := newClient(baseURL, "", originControlPlane, opts)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{c: c}, nil
}

// URL is the server's base URL.
func (cp *ControlPlane) URL() string { return cp.c.base.String() + cp.c.prefix }

// Sandbox returns a Client for the daemon of sandbox id, through the
// control plane's proxy: every Client method works on it, WebSockets and
// event streams included. It shares this ControlPlane's token and HTTP
// client, and makes no request until used (an unknown id is ErrNotFound
// then).
func (cp *ControlPlane) Sandbox(id string) *Client {
	c := *cp.c
	c.prefix = cp.c.prefix + "/v1/sandboxes/" + url.PathEscape(id)
	c.origin = originSandboxd
	return &c
}

func jobPath(id, sub string) string { return "/v1/jobs/" + url.PathEscape(id) + sub }

// CreateJob submits a job (POST /v1/jobs); it starts pending.
func (cp *ControlPlane) CreateJob(ctx context.Context, req cpapi.JobRequest) (*cpapi.Job, error) {
	var j cpapi.Job
	if err := cp.c.call(ctx, http.MethodPost, "/v1/jobs", nil, req, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// GetJob returns one job.
func (cp *ControlPlane) GetJob(ctx context.Context, id string) (*cpapi.Job, error) {
	var j cpapi.Job
	if err := cp.c.call(ctx, http.MethodGet, jobPath(id, ""), nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ListJobsOptions select a page of ListJobs. Zero values do not filter.
type ListJobsOptions struct {
	Status string // one status, or several separated by commas
	Cursor string // the previous page's Next
	Limit  int    // page size; the server's default (50) when 0
}

// ListJobs returns a page of the tenant's jobs, newest first; the page's
// Next is the Cursor of the following one, "" after the last.
func (cp *ControlPlane) ListJobs(ctx context.Context, opts ListJobsOptions) (*cpapi.JobList, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", opts.Status)
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var list cpapi.JobList
	if err := cp.c.call(ctx, http.MethodGet, "/v1/jobs", q, nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// CancelJob cancels a job that has not finished, and returns it as
// cancelled; its sandbox is removed. A finished job is ErrConflict.
func (cp *ControlPlane) CancelJob(ctx context.Context, id string) (*cpapi.Job, error) {
	var j cpapi.Job
	if err := cp.c.call(ctx, http.MethodPost, jobPath(id, "/cancel"), nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// SendMessage gives the job's agent a message from the user, read before
// its next step. A finished job, or one whose agent takes no messages
// (script), is ErrConflict.
func (cp *ControlPlane) SendMessage(ctx context.Context, id, text string) error {
	return cp.c.call(ctx, http.MethodPost, jobPath(id, "/messages"), nil, cpapi.MessageRequest{Text: text}, nil)
}

// Artifacts streams the job's artifact zip (its workspace, changes.patch
// and events.jsonl); ErrNotFound until the job has packed them. The
// caller closes the body. The body also has a method Size() int64: the
// length the server announced, -1 when it did not.
func (cp *ControlPlane) Artifacts(ctx context.Context, id string) (io.ReadCloser, error) {
	return cp.download(ctx, jobPath(id, "/artifacts"))
}

// Diff streams the job's changes as a unified diff; ErrNotFound for a job
// without a repository. The caller closes the body.
func (cp *ControlPlane) Diff(ctx context.Context, id string) (io.ReadCloser, error) {
	return cp.download(ctx, jobPath(id, "/diff"))
}

// sizedBody is a response body that knows its announced length.
type sizedBody struct {
	io.ReadCloser
	size int64
}

// Size is the length the server announced, -1 when unknown.
func (b sizedBody) Size() int64 { return b.size }

func (cp *ControlPlane) download(ctx context.Context, route string) (io.ReadCloser, error) {
	req, err := cp.c.newRequest(ctx, http.MethodGet, cp.c.endpoint(route, nil), nil)
	if err != nil {
		return nil, err
	}
	resp, err := cp.c.do(req)
	if err != nil {
		return nil, err
	}
	return sizedBody{ReadCloser: resp.Body, size: resp.ContentLength}, nil
}

// Schedule submits a task in the seed-001 form (POST /schedule): the
// server's defaults for everything else.
func (cp *ControlPlane) Schedule(ctx context.Context, task string) (*cpapi.ScheduleResponse, error) {
	var res cpapi.ScheduleResponse
	if err := cp.c.call(ctx, http.MethodPost, "/schedule", nil, cpapi.ScheduleRequest{Task: task}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Status is the seed-001 view of a job (GET /status/{id}): pending,
// running, complete or error, and where its artifacts download from.
func (cp *ControlPlane) Status(ctx context.Context, id string) (*cpapi.StatusResponse, error) {
	var res cpapi.StatusResponse
	if err := cp.c.call(ctx, http.MethodGet, "/status/"+url.PathEscape(id), nil, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
