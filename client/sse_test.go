package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

// fakeDaemon answers every request with one canned event stream, to test
// the SSE reader on inputs a real daemon does not produce.
func fakeDaemon(t *testing.T, body string) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEventsParsing(t *testing.T) {
	body := ": heartbeat\r\n\r\n" +
		"retry: 1000\r\n" +
		"id: 7\r\nevent: process.created\r\ndata: {\"id\":\"p_1\",\r\ndata:\"status\":\"running\"}\r\n\r\n" +
		"event: ignored-no-data\n\n" +
		"event: process.exited\ndata: {\"id\":\"p_1\",\"status\":\"exited\"}\n\n" + // id carried over
		"id: 9\nevent: process.deleted\ndata:{\"id\":\"p_1\"}\n\n"
	es, err := fakeDaemon(t, body).Events(testContext(t, 5*time.Second), "")
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	defer es.Close()
	want := []struct{ id, typ, status string }{
		{"7", sandboxapi.EventProcessCreated, "running"},
		{"7", sandboxapi.EventProcessExited, "exited"},
		{"9", sandboxapi.EventProcessDeleted, ""},
	}
	for i, w := range want {
		ev, err := es.Next()
		if err != nil {
			t.Fatalf("Next #%d: %v", i, err)
		}
		if ev.ID != w.id || ev.Type != w.typ || ev.Process.ID != "p_1" || ev.Process.Status != w.status {
			t.Errorf("event #%d = %s %s %+v; want %s %s status %q", i, ev.ID, ev.Type, ev.Process, w.id, w.typ, w.status)
		}
	}
	if _, err := es.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next at the end = %v; want io.EOF", err)
	}
}

// TestEventsCutMidEvent checks that an event cut short does not count:
// its id line must not move LastEventID, or a resume would skip it.
func TestEventsCutMidEvent(t *testing.T) {
	body := "id: 7\nevent: process.created\ndata: {\"id\":\"p_1\"}\n\n" +
		"id: 8\nevent: process.exited\ndata: {\"id\":"
	es, err := fakeDaemon(t, body).Events(testContext(t, 5*time.Second), "")
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	defer es.Close()
	if ev, err := es.Next(); err != nil || ev.ID != "7" {
		t.Fatalf("Next = %+v, %v; want event 7", ev, err)
	}
	if _, err := es.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Next on a cut event = %v; want io.ErrUnexpectedEOF", err)
	}
	if got := es.LastEventID(); got != "7" {
		t.Errorf("LastEventID after a cut event = %q; want 7, the last one delivered", got)
	}
}

func TestExecStreamErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"error event", "event: stdout\ndata: {\"data\":\"x\"}\n\n" +
			"event: error\ndata: {\"type\":\"about:blank\",\"title\":\"Unprocessable Entity\",\"status\":422,\"detail\":\"nope\"}\n\n",
			client.ErrUnprocessable},
		{"cut before exit", "event: stdout\ndata: {\"data\":\"x\"}\n\n", io.ErrUnexpectedEOF},
		{"cut inside an event", "event: stdout\ndata: {\"data\":", io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		_, err := fakeDaemon(t, tt.body).ExecStream(testContext(t, 5*time.Second), sandboxapi.ExecRequest{Command: "x"}, nil)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: ExecStream error = %v; want %v", tt.name, err, tt.want)
		}
	}
}
