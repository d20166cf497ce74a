package bwrap

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/runtime"
)

// childEnv makes this test binary the creator process of
// TestSurvivesCreator: it creates a sandbox, prints its id and waits to
// be killed.
const childEnv = "CORRAL_BWRAP_TEST_CREATOR"

// TestSurvivesCreator creates a sandbox from a child process, SIGKILLs the
// child, and checks that a new Runtime in this process finds the sandbox
// running, reaches it, and deletes it (twice: Delete is idempotent).
func TestSurvivesCreator(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		r := newTestRuntime(t)
		sb, err := r.Create(context.Background(), runtime.Spec{Template: testTemplate, Resources: runtime.Resources{MemoryMB: 128}})
		if err != nil {
			t.Fatalf("child Create: %v", err)
		}
		fmt.Printf("\nSANDBOX=%s\n", sb.ID)
		select {} // until the parent kills us
	}
	newTestRuntime(t) // imports the template, or skips
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSurvivesCreator$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "SANDBOX="); ok {
				ids <- id
				break
			}
		}
		close(ids)
	}()
	var id string
	select {
	case id = <-ids:
	case <-time.After(2 * time.Minute):
	}
	_ = cmd.Process.Kill() // SIGKILL: no cleanup runs in the creator
	_ = cmd.Wait()
	if id == "" {
		t.Fatal("the child did not create a sandbox")
	}

	r := newTestRuntime(t)
	ctx := ctxFor(t, time.Minute)
	t.Cleanup(func() { _ = r.Delete(context.Background(), id) })
	sb, err := r.Get(ctx, id)
	if err != nil || sb.Status != runtime.StatusRunning {
		t.Fatalf("Get after the creator died = %+v, %v; want running", sb, err)
	}
	all, err := r.List(ctx)
	found := false
	for _, s := range all {
		found = found || s.ID == id
	}
	if err != nil || !found {
		t.Errorf("List = %d sandboxes, %v; want %s among them", len(all), err, id)
	}
	if got := mustSh(t, sandboxClient(t, sb), "echo still-here"); got != "still-here" {
		t.Errorf("exec after the creator died = %q", got)
	}
	for i := range 2 {
		if err := r.Delete(ctx, id); err != nil {
			t.Errorf("Delete #%d: %v", i+1, err)
		}
	}
	if sb, err := r.Get(ctx, id); err == nil {
		t.Errorf("Get after Delete = %+v; want not found", sb)
	}
}
