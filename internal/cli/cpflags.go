//go:build !slim

package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/userconfig"
)

// defaultControlPlaneURL is where `corral up` listens by default.
const defaultControlPlaneURL = "http://127.0.0.1:7070"

// cpFlags are the flags of the commands that talk to the control plane:
// where it is, the token, and whether to print JSON.
type cpFlags struct {
	url, token string
	json       bool
}

// register adds --url and --token; withJSON adds --json too, for
// commands that print data.
func (f *cpFlags) register(cmd *cobra.Command, withJSON bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.url, "url", "", "control plane URL (env CORRAL_URL, else the config file's, else "+defaultControlPlaneURL+")")
	fs.StringVar(&f.token, "token", "", "API token (env CORRAL_TOKEN, else the config file's)")
	if withJSON {
		fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	}
}

// target resolves the server URL and token: the flags, then the
// environment, then the config file `corral up` wrote. The file's token
// is only sent to the file's server, never to another URL.
func (f *cpFlags) target() (baseURL, token string, err error) {
	baseURL, token = f.url, f.token
	if baseURL == "" {
		baseURL = os.Getenv("CORRAL_URL")
	}
	if token == "" {
		token = os.Getenv("CORRAL_TOKEN")
	}
	if baseURL == "" || token == "" {
		var cfg userconfig.Config
		if p := userconfig.Path(); p != "" {
			if cfg, err = userconfig.Load(p); err != nil {
				return "", "", err
			}
		}
		if baseURL == "" {
			baseURL = cfg.URL
		}
		if baseURL == "" {
			baseURL = defaultControlPlaneURL
		}
		if token == "" && (cfg.URL == "" || sameServer(cfg.URL, baseURL)) {
			token = cfg.Token
		}
	}
	return strings.TrimSuffix(baseURL, "/"), token, nil
}

// sameServer reports whether two base URLs name the same server; the
// loopback names count as one.
func sameServer(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimSuffix(a, "/"))
	ub, err2 := url.Parse(strings.TrimSuffix(b, "/"))
	if err1 != nil || err2 != nil {
		return false
	}
	loopback := func(h string) string {
		if h == "localhost" || net.ParseIP(h).IsLoopback() {
			return "loopback"
		}
		return h
	}
	return ua.Scheme == ub.Scheme && ua.Path == ub.Path && ua.Port() == ub.Port() &&
		loopback(ua.Hostname()) == loopback(ub.Hostname())
}

// run makes a RunE that connects to the control plane, calls fn, and
// turns what fails into a message for people (see humanize).
func (f *cpFlags) run(fn func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		baseURL, token, err := f.target()
		if err != nil {
			return err
		}
		cp, err := client.NewControlPlane(baseURL, client.WithToken(token))
		if err != nil {
			return err
		}
		return humanize(fn(cmd.Context(), cp, cmd, args), baseURL)
	}
}

// humanError is an error with a message for people; errors.Is and As
// still see the original.
type humanError struct {
	msg string
	err error
}

func (e *humanError) Error() string { return e.msg }
func (e *humanError) Unwrap() error { return e.err }

// humanize rewrites an error from the SDK as a sentence: the server's
// problem detail instead of the request line, and a hint for the usual
// mistakes (no server, no token). Other errors pass unchanged.
func humanize(err error, baseURL string) error {
	if err == nil || Quiet(err) {
		return err
	}
	var he *humanError
	if errors.As(err, &he) {
		return err
	}
	var ae *client.APIError
	if errors.As(err, &ae) {
		return &humanError{msg: problemMessage(ae), err: err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &humanError{msg: fmt.Sprintf("cannot reach the control plane at %s (is `corral up` running?): %v", baseURL, oe.Err), err: err}
	}
	return err
}

// problemMessage is the people's version of an API error: the problem's
// detail, after the title unless the detail already says it.
func problemMessage(ae *client.APIError) string {
	title := strings.ToLower(ae.Title)
	msg := ae.Detail
	switch {
	case msg == "":
		msg = title
	case !strings.Contains(strings.ToLower(msg), title):
		msg = title + ": " + msg
	}
	if ae.Status == http.StatusUnauthorized {
		hint := "give a token with --token or CORRAL_TOKEN"
		if p := userconfig.Path(); p != "" {
			hint += "; `corral up` writes its admin token to " + p
		}
		msg += " (" + hint + ")"
	}
	return msg
}

// specFlags describe the sandbox a job or `sandbox create` asks for.
type specFlags struct {
	template, runtime, network, memory string
	cpus                               float64
	timeout                            time.Duration
	env                                []string
}

func (f *specFlags) register(cmd *cobra.Command, timeoutUsage string) {
	fs := cmd.Flags()
	fs.StringVar(&f.template, "template", "", "sandbox template (image) (default: the server's)")
	fs.StringVar(&f.runtime, "runtime", "", "sandbox runtime: docker, bwrap, ... (default: the server's)")
	fs.StringVar(&f.network, "network", "", `network: "none" or "egress" (default none)`)
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU limit, e.g. 1.5")
	fs.StringVar(&f.memory, "memory", "", "memory limit: MiB, or with a unit (512M, 2G)")
	fs.DurationVar(&f.timeout, "timeout", 0, timeoutUsage)
	fs.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
}

// resources are the limits the flags set; nil when none.
func (f *specFlags) resources() (*cpapi.Resources, error) {
	mb, err := parseMemoryMB(f.memory)
	if err != nil {
		return nil, err
	}
	if f.cpus == 0 && mb == 0 {
		return nil, nil
	}
	return &cpapi.Resources{CPUs: f.cpus, MemoryMB: mb}, nil
}

// timeoutS is --timeout in whole seconds, rounded up.
func (f *specFlags) timeoutS() int64 {
	return int64((f.timeout + time.Second - 1) / time.Second)
}

// parseMemoryMB reads a memory size in MiB: "2048", "512M", "2G", "1.5g".
func parseMemoryMB(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	num, mult := strings.ToUpper(strings.TrimSpace(s)), 1.0
	num = strings.TrimSuffix(strings.TrimSuffix(num, "B"), "I")
	switch {
	case strings.HasSuffix(num, "G"):
		num, mult = strings.TrimSuffix(num, "G"), 1024
	case strings.HasSuffix(num, "M"):
		num = strings.TrimSuffix(num, "M")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("--memory %q: want MiB or a size such as 512M or 2G", s)
	}
	return int64(math.Ceil(v * mult)), nil
}
