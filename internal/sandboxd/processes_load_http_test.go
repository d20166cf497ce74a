package sandboxd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// TestFiveHundredConcurrentProcesses spawns 500 processes through the
// daemon at once, from 50 clients, and checks they all run, are listed,
// and are all gone after the daemon deletes them.
func TestFiveHundredConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	a := newAPI(t)
	const n, clients = 500, 50
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				body, _ := json.Marshal(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"60"}, Tag: fmt.Sprint("load-", i)})
				resp, err := a.d.HTTP.Post(a.d.URL+"/v1/processes", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("spawn %d: %v", i, err)
					return
				}
				var p sandboxapi.Process
				_ = json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("spawn %d: status %d", i, resp.StatusCode)
					return
				}
				ids <- p.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	if t.Failed() {
		return
	}
	_, body := a.do("GET", "/v1/processes?status=running", nil)
	var list sandboxapi.ProcessList
	_ = json.Unmarshal(body, &list)
	if len(list.Processes) != n {
		t.Fatalf("running processes = %d; want %d", len(list.Processes), n)
	}
	pids := map[int]bool{}
	for _, p := range list.Processes {
		pids[p.PID] = true
	}
	var del sync.WaitGroup
	for id := range ids {
		del.Go(func() {
			req, _ := http.NewRequest("DELETE", a.d.URL+"/v1/processes/"+id, nil)
			resp, err := a.d.HTTP.Do(req)
			if err != nil || resp.StatusCode != http.StatusNoContent {
				t.Errorf("delete %s: %v %v", id, err, resp)
				return
			}
			resp.Body.Close()
		})
	}
	del.Wait()
	_, body = a.do("GET", "/v1/processes", nil)
	_ = json.Unmarshal(body, &list)
	if len(list.Processes) != 0 {
		t.Errorf("after deleting all, %d processes are listed", len(list.Processes))
	}
	for pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still alive after its process was deleted", pid)
		}
	}
}

// TestNoZombiesThroughDaemon runs short-lived processes and execs that
// fork children, and checks that none of the daemon's children is left a
// zombie afterwards.
func TestNoZombiesThroughDaemon(t *testing.T) {
	a := newAPI(t)
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "true & true & exit 3"}}).ID)
		if resp, body := a.do("POST", "/v1/exec", `{"command":"true & exit 0","shell":true}`); resp.StatusCode != 200 {
			t.Fatalf("exec: %d %s", resp.StatusCode, body)
		}
	}
	for _, id := range ids {
		if p := a.waitExit(id); p.ExitCode == nil || *p.ExitCode != 3 {
			t.Fatalf("process %s exit = %v; want 3", id, p.ExitCode)
		}
	}
	if z := zombieChildren(os.Getpid()); len(z) > 0 {
		t.Errorf("zombie children of the daemon: %v", z)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// zombieChildren lists zombie processes whose parent is ppid.
func zombieChildren(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}
