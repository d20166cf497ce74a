package sandboxapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseClientFrame(t *testing.T) {
	tests := []struct {
		in   string
		want string // type, or "" for an error
	}{
		{`{"type":"resize","rows":24,"cols":80}`, FrameResize},
		{`{"type":"signal","signal":"SIGINT"}`, FrameSignal},
		{`{"type":"close_stdin"}`, FrameCloseStdin},
		{`{"type":"resize","rows":0,"cols":80}`, ""},
		{`{"type":"resize","rows":24,"cols":100000}`, ""},
		{`{"type":"signal"}`, ""},
		{`{"type":"signal","signal":""}`, ""},
		{`{"type":"exit"}`, ""}, // a server frame
		{`{"type":"resize","rows":24,"cols":80,"extra":1}`, ""},
		{`{"type":"close_stdin"} {}`, ""},
		{`{"type":"resize","rows":"24","cols":80}`, ""},
		{`not json`, ""},
		{``, ""},
		{`{"type":"close_stdin","pad":"` + strings.Repeat("x", MaxControlFrame) + `"}`, ""},
	}
	for _, tt := range tests {
		f, err := ParseClientFrame([]byte(tt.in))
		switch {
		case tt.want == "" && !errors.Is(err, ErrBadFrame):
			t.Errorf("ParseClientFrame(%.60q) = %+v, %v; want ErrBadFrame", tt.in, f, err)
		case tt.want != "" && (err != nil || f.Type != tt.want):
			t.Errorf("ParseClientFrame(%.60q) = %+v, %v; want type %q", tt.in, f, err, tt.want)
		}
	}
}

func TestServerFramesJSON(t *testing.T) {
	zero, sig := 0, "SIGKILL"
	tests := []struct {
		f    ControlFrame
		want string
	}{
		{ControlFrame{Type: FrameExit, ExitCode: &zero}, `{"type":"exit","exit_code":0,"signal":null}`},
		{ControlFrame{Type: FrameExit, Signal: &sig}, `{"type":"exit","exit_code":null,"signal":"SIGKILL"}`},
		{ControlFrame{Type: FrameTruncated, From: 0}, `{"type":"truncated","from":0}`},
		{ControlFrame{Type: FrameTruncated, From: 42}, `{"type":"truncated","from":42}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.f)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.f, b, err, tt.want)
		}
	}
}

// FuzzParseClientFrame: any input either fails with ErrBadFrame or yields
// a frame of a client type whose fields pass validation; never a panic.
func FuzzParseClientFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"resize","rows":24,"cols":80}`, `{"type":"signal","signal":"INT"}`,
		`{"type":"close_stdin"}`, `{"type":"resize","rows":-1,"cols":1e9}`, `{"type":null}`,
		`[]`, `"x"`, `{"type":"signal","signal":"\u0000"}`, "\xff\xfe", `{"type":"resize","rows":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := ParseClientFrame(data)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error %v is not ErrBadFrame", err)
			}
			return
		}
		switch fr.Type {
		case FrameResize:
			if ValidSize(fr.Rows, fr.Cols) != nil {
				t.Fatalf("accepted resize %dx%d", fr.Rows, fr.Cols)
			}
		case FrameSignal:
			if fr.Signal == nil || *fr.Signal == "" {
				t.Fatal("accepted signal frame without a signal")
			}
		case FrameCloseStdin:
		default:
			t.Fatalf("accepted frame type %q", fr.Type)
		}
	})
}
