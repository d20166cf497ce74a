package forge_test

import (
	"fmt"
	"testing"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// TestGiteaPaging: the open pull request of a head is found past the first
// page of the listing, which has no filter by head.
func TestGiteaPaging(t *testing.T) {
	e := providers[2].setup(t, forgetest.Options{})
	for i := range 60 {
		e.open(t, fmt.Sprintf("head-%d", i))
	}
	if pr := e.open(t, "head-0"); pr.Number != 1 || !pr.Existed { // the oldest: on page 2, newest first
		t.Errorf("CreatePullRequest(head-0) again = %+v; want #1, existed", pr)
	}
	if n := e.s.Calls(forgetest.CallListPRs); n != 2 {
		t.Errorf("%d list calls; want 2 pages", n)
	}
}
