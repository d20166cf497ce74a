package jobs

import (
	"context"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/store"
)

// prepareWorkspace readies the sandbox's workspace before the agent runs:
// for a repository job, the clone and the job's branch.
func (r *runner) prepareWorkspace(ctx context.Context, req *cpapi.JobRequest) error {
	return nil
}

// complete ends the work in the sandbox after the agent: for a
// repository job, the commit, the push and the pull request, recorded in
// res.
func (r *runner) complete(ctx context.Context, req *cpapi.JobRequest, cl *client.Client, res *store.JobResult) error {
	return nil
}

// agentEnv is the environment of the agent's processes: the job's env.
func (r *runner) agentEnv(ctx context.Context, req *cpapi.JobRequest) (map[string]string, error) {
	env := make(map[string]string, len(req.Env))
	for k, v := range req.Env {
		env[k] = v
	}
	return env, nil
}
