package client_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

// readAll reads a process's whole retained output with ReadOutput.
func readAll(ctx context.Context, t *testing.T, c *client.Client, ref string) []byte {
	t.Helper()
	var all []byte
	offset := int64(0)
	for {
		out, err := c.ReadOutput(ctx, ref, client.OutputOptions{Offset: offset})
		if err != nil {
			t.Fatalf("ReadOutput(%q, %d): %v", ref, offset, err)
		}
		if out.Truncated {
			t.Fatalf("ReadOutput(%q, %d) truncated; the test output should fit the window", ref, offset)
		}
		all = append(all, out.Data...)
		if len(out.Data) == 0 || out.NextOffset == offset {
			return all
		}
		offset = out.NextOffset
	}
}

func TestSpawnGetList(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		short, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sh", Args: []string{"-c", "echo hello $WHO"},
			Env: map[string]string{"WHO": "corral"}, Tag: "short", Label: "Short one",
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		long, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sleep", Args: []string{"30"}, PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}, Tag: "long",
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), long.ID) })

		if short.ID == "" || short.Tag != "short" || short.Label != "Short one" || short.PID == 0 {
			t.Errorf("Spawn() = %+v; want an id, tag %q, label and pid", short, "short")
		}
		p := waitExited(ctx, t, d.c, "short")
		if p.ID != short.ID || p.ExitCode == nil || *p.ExitCode != 0 {
			t.Errorf("GetProcess(short) = id %s, exit %v; want id %s, exit 0", p.ID, p.ExitCode, short.ID)
		}
		if got, want := string(readAll(ctx, t, d.c, short.ID)), "hello corral\n"; got != want {
			t.Errorf("output = %q; want %q", got, want)
		}
		if p.OutputBytes != int64(len("hello corral\n")) {
			t.Errorf("OutputBytes = %d; want %d", p.OutputBytes, len("hello corral\n"))
		}

		yes, no := true, false
		tests := []struct {
			name string
			opts client.ListOptions
			want []string
		}{
			{"all", client.ListOptions{}, []string{short.ID, long.ID}},
			{"running", client.ListOptions{Status: sandboxapi.StatusRunning}, []string{long.ID}},
			{"exited", client.ListOptions{Status: sandboxapi.StatusExited}, []string{short.ID}},
			{"tag", client.ListOptions{Tag: "long"}, []string{long.ID}},
			{"pty", client.ListOptions{PTY: &yes}, []string{long.ID}},
			{"no pty", client.ListOptions{PTY: &no}, []string{short.ID}},
		}
		for _, tt := range tests {
			list, err := d.c.ListProcesses(ctx, tt.opts)
			if err != nil {
				t.Errorf("ListProcesses(%s): %v", tt.name, err)
				continue
			}
			var got []string
			for _, p := range list {
				got = append(got, p.ID)
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ListProcesses(%s) = %v; want %v", tt.name, got, tt.want)
			}
		}

		if err := d.c.DeleteProcess(ctx, "short"); err != nil {
			t.Fatalf("DeleteProcess(short): %v", err)
		}
		if _, err := d.c.GetProcess(ctx, short.ID); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("GetProcess after delete: %v; want ErrNotFound", err)
		}
	})
}

func TestInputAndOutput(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "cat", Stdin: true})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		inputs := [][]byte{
			[]byte("text\n"),
			{0xff, 0xfe, 0x00, 'x', 0x80}, // not UTF-8: travels as data_base64
			[]byte("héllo\n"),
		}
		var want []byte
		for _, in := range inputs {
			if err := d.c.WriteInput(ctx, p.ID, in); err != nil {
				t.Fatalf("WriteInput(%q): %v", in, err)
			}
			want = append(want, in...)
		}
		// Long-poll until everything came back.
		var got []byte
		for len(got) < len(want) {
			out, err := d.c.ReadOutput(ctx, p.ID, client.OutputOptions{Offset: int64(len(got)), WaitMS: 2000})
			if err != nil {
				t.Fatalf("ReadOutput: %v", err)
			}
			if out.Offset != int64(len(got)) || out.NextOffset != out.Offset+int64(len(out.Data)) {
				t.Fatalf("ReadOutput(%d) offsets = %d..%d with %d bytes; want %d..%d",
					len(got), out.Offset, out.NextOffset, len(out.Data), len(got), len(got)+len(out.Data))
			}
			got = append(got, out.Data...)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("cat output = %q; want %q", got, want)
		}
		if err := d.c.CloseStdin(ctx, p.ID); err != nil {
			t.Fatalf("CloseStdin: %v", err)
		}
		if e := waitExited(ctx, t, d.c, p.ID); e.ExitCode == nil || *e.ExitCode != 0 {
			t.Errorf("cat exit = %v; want 0", e.ExitCode)
		}
		if err := d.c.Signal(ctx, p.ID, "SIGTERM"); !errors.Is(err, client.ErrConflict) {
			t.Errorf("Signal after exit: %v; want ErrConflict", err)
		}
	})
}

func TestSignalAndResize(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sh", Args: []string{"-c", "trap 'stty size; exit 7' USR1; while :; do sleep 0.05; done"},
			PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80},
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		if err := d.c.Resize(ctx, p.ID, 33, 111); err != nil {
			t.Fatalf("Resize: %v", err)
		}
		if err := d.c.Resize(ctx, p.ID, 0, 10); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Resize(0x10) = %v; want ErrInvalid", err)
		}
		if got, err := d.c.GetProcess(ctx, p.ID); err != nil || got.Rows != 33 || got.Cols != 111 {
			t.Errorf("GetProcess after Resize = %dx%d, %v; want 33x111", got.Rows, got.Cols, err)
		}
		time.Sleep(100 * time.Millisecond) // let sh set its trap
		if err := d.c.Signal(ctx, p.ID, "USR1"); err != nil {
			t.Fatalf("Signal(USR1): %v", err)
		}
		e := waitExited(ctx, t, d.c, p.ID)
		if e.ExitCode == nil || *e.ExitCode != 7 {
			t.Errorf("exit code = %v; want 7", e.ExitCode)
		}
		if got := string(readAll(ctx, t, d.c, p.ID)); !bytes.Contains([]byte(got), []byte("33 111")) {
			t.Errorf("stty size printed %q; want it to contain %q", got, "33 111")
		}

		k, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		if err := d.c.Signal(ctx, k.ID, "9"); err != nil {
			t.Fatalf("Signal(9): %v", err)
		}
		e = waitExited(ctx, t, d.c, k.ID)
		if e.Signal == nil || (*e.Signal != "SIGKILL" && *e.Signal != "KILL" && *e.Signal != "9") {
			t.Errorf("killed process: signal = %v, exit = %v; want SIGKILL", e.Signal, e.ExitCode)
		}
	})
}

func TestEvents(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		es, err := d.c.Events(ctx, "")
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		defer es.Close()
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "true"})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		waitExited(ctx, t, d.c, p.ID)
		if err := d.c.DeleteProcess(ctx, p.ID); err != nil {
			t.Fatalf("DeleteProcess: %v", err)
		}
		// created, possibly updated, exited, deleted: in that order.
		var got []client.ProcessEvent
		for len(got) == 0 || got[len(got)-1].Type != sandboxapi.EventProcessDeleted {
			ev, err := es.Next()
			if err != nil {
				t.Fatalf("Next after %d events: %v", len(got), err)
			}
			if ev.Process.ID == p.ID {
				got = append(got, ev)
			}
		}
		var types []string
		for _, ev := range got {
			if ev.Type != sandboxapi.EventProcessUpdated {
				types = append(types, ev.Type)
			}
		}
		want := []string{sandboxapi.EventProcessCreated, sandboxapi.EventProcessExited, sandboxapi.EventProcessDeleted}
		if !slices.Equal(types, want) {
			t.Errorf("event types = %v; want %v", types, want)
		}
		if got[0].ID == "" || es.LastEventID() != got[len(got)-1].ID {
			t.Errorf("event ids: first %q, LastEventID %q, last %q", got[0].ID, es.LastEventID(), got[len(got)-1].ID)
		}

		// Resume after the first event: the rest come again.
		es2, err := d.c.Events(ctx, got[0].ID)
		if err != nil {
			t.Fatalf("Events(%q): %v", got[0].ID, err)
		}
		defer es2.Close()
		ev, err := es2.Next()
		if err != nil {
			t.Fatalf("resumed Next: %v", err)
		}
		if ev.ID != got[1].ID || ev.Type != got[1].Type {
			t.Errorf("resumed after %s: first event %s %s; want %s %s", got[0].ID, ev.ID, ev.Type, got[1].ID, got[1].Type)
		}
	})
}

func TestReadOutputOptions(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "printf out; sleep 0.1; printf err >&2"}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		waitExited(ctx, t, d.c, p.ID)
		tests := []struct {
			name     string
			opts     client.OutputOptions
			wantData string
			wantNext int64
		}{
			{"all", client.OutputOptions{}, "outerr", 6},
			{"from 2", client.OutputOptions{Offset: 2}, "terr", 6},
			{"limit", client.OutputOptions{Limit: 2}, "ou", 2},
			{"stderr only", client.OutputOptions{Stream: "stderr"}, "err", 6},
			{"stdout only", client.OutputOptions{Stream: "stdout"}, "out", 6},
			{"at the end", client.OutputOptions{Offset: 6, WaitMS: 5000}, "", 6},
		}
		for _, tt := range tests {
			out, err := d.c.ReadOutput(ctx, p.ID, tt.opts)
			if err != nil {
				t.Errorf("ReadOutput(%s): %v", tt.name, err)
				continue
			}
			if string(out.Data) != tt.wantData || out.NextOffset != tt.wantNext || out.Truncated {
				t.Errorf("ReadOutput(%s) = %q next %d truncated %v; want %q next %d", tt.name, out.Data, out.NextOffset, out.Truncated, tt.wantData, tt.wantNext)
			}
			if out.Status != sandboxapi.StatusExited {
				t.Errorf("ReadOutput(%s).Status = %q; want %q", tt.name, out.Status, sandboxapi.StatusExited)
			}
		}
	})
}
