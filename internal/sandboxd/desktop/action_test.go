package desktop

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func TestParseAction(t *testing.T) {
	xy := []int{10, 20}
	tests := []struct {
		name string
		in   sandboxapi.DesktopAction
		want error // nil: valid
		msg  string
	}{
		{"empty", sandboxapi.DesktopAction{}, errdefs.ErrInvalid, "action is required"},
		{"unknown", sandboxapi.DesktopAction{Action: "explode"}, errdefs.ErrInvalid, `unknown action "explode"`},
		{"screenshot", sandboxapi.DesktopAction{Action: "screenshot"}, errdefs.ErrInvalid, "GET /v1/desktop/screenshot"},
		{"key", sandboxapi.DesktopAction{Action: "key", Key: "ctrl+c"}, nil, ""},
		{"key as text", sandboxapi.DesktopAction{Action: "key", Text: "Return"}, nil, ""},
		{"key both same", sandboxapi.DesktopAction{Action: "key", Text: "Return", Key: "Return"}, nil, ""},
		{"key both differ", sandboxapi.DesktopAction{Action: "key", Text: "Return", Key: "Tab"}, errdefs.ErrInvalid, "not both"},
		{"key sequence", sandboxapi.DesktopAction{Action: "key", Key: "ctrl+a Delete"}, nil, ""},
		{"key missing", sandboxapi.DesktopAction{Action: "key"}, errdefs.ErrInvalid, "needs key"},
		{"key option injection", sandboxapi.DesktopAction{Action: "key", Key: "--window 1"}, errdefs.ErrInvalid, "not a key name"},
		{"key control char", sandboxapi.DesktopAction{Action: "key", Key: "a\x1b"}, errdefs.ErrInvalid, "not a key name"},
		{"key punctuation", sandboxapi.DesktopAction{Action: "key", Key: "@"}, nil, ""},
		{"key too long", sandboxapi.DesktopAction{Action: "key", Key: strings.Repeat("a ", 200)}, errdefs.ErrTooLarge, "at most 256"},
		{"key with coordinate", sandboxapi.DesktopAction{Action: "key", Key: "a", Coordinate: xy}, errdefs.ErrInvalid, "does not take coordinate"},
		{"hold_key", sandboxapi.DesktopAction{Action: "hold_key", Key: "shift", Duration: 0.5}, nil, ""},
		{"hold_key no duration", sandboxapi.DesktopAction{Action: "hold_key", Key: "shift"}, errdefs.ErrInvalid, "needs duration"},
		{"hold_key too long", sandboxapi.DesktopAction{Action: "hold_key", Key: "shift", Duration: 31}, errdefs.ErrInvalid, "at most 30"},
		{"type", sandboxapi.DesktopAction{Action: "type", Text: "héllo\n"}, nil, ""},
		{"type empty", sandboxapi.DesktopAction{Action: "type"}, errdefs.ErrInvalid, "needs text"},
		{"type with key", sandboxapi.DesktopAction{Action: "type", Text: "a", Key: "b"}, errdefs.ErrInvalid, "does not take key"},
		{"type too long", sandboxapi.DesktopAction{Action: "type", Text: strings.Repeat("x", MaxTypeBytes+1)}, errdefs.ErrTooLarge, "at most 4096"},
		{"type NUL", sandboxapi.DesktopAction{Action: "type", Text: "a\x00b"}, errdefs.ErrInvalid, "NUL"},
		{"type invalid UTF-8", sandboxapi.DesktopAction{Action: "type", Text: "a\xffb"}, errdefs.ErrInvalid, "UTF-8"},
		{"mouse_move", sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: xy}, nil, ""},
		{"mouse_move without coordinate", sandboxapi.DesktopAction{Action: "mouse_move"}, errdefs.ErrInvalid, "needs coordinate"},
		{"mouse_move 3 numbers", sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: []int{1, 2, 3}}, errdefs.ErrInvalid, "[x, y]"},
		{"mouse_move 1 number", sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: []int{1}}, errdefs.ErrInvalid, "[x, y]"},
		{"mouse_move with text", sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: xy, Text: "a"}, errdefs.ErrInvalid, "does not take key or text"},
		{"left_click here", sandboxapi.DesktopAction{Action: "left_click"}, nil, ""},
		{"left_click at", sandboxapi.DesktopAction{Action: "left_click", Coordinate: xy}, nil, ""},
		{"left_click with modifiers", sandboxapi.DesktopAction{Action: "left_click", Coordinate: xy, Text: "ctrl+shift"}, nil, ""},
		{"left_click with modifier key", sandboxapi.DesktopAction{Action: "left_click", Key: "super"}, nil, ""},
		{"left_click with a letter", sandboxapi.DesktopAction{Action: "left_click", Key: "a"}, errdefs.ErrInvalid, "not a modifier"},
		{"right_click duration", sandboxapi.DesktopAction{Action: "right_click", Duration: 1}, errdefs.ErrInvalid, "does not take duration"},
		{"triple_click", sandboxapi.DesktopAction{Action: "triple_click", Coordinate: xy}, nil, ""},
		{"drag", sandboxapi.DesktopAction{Action: "left_click_drag", StartCoordinate: xy, Coordinate: []int{30, 40}}, nil, ""},
		{"drag from pointer", sandboxapi.DesktopAction{Action: "left_click_drag", Coordinate: xy}, nil, ""},
		{"drag without end", sandboxapi.DesktopAction{Action: "left_click_drag", StartCoordinate: xy}, errdefs.ErrInvalid, "needs coordinate"},
		{"start_coordinate on click", sandboxapi.DesktopAction{Action: "left_click", StartCoordinate: xy}, errdefs.ErrInvalid, "does not take start_coordinate"},
		{"mouse down", sandboxapi.DesktopAction{Action: "left_mouse_down"}, nil, ""},
		{"mouse up at", sandboxapi.DesktopAction{Action: "left_mouse_up", Coordinate: xy}, nil, ""},
		{"scroll", sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "down", ScrollAmount: 5, Coordinate: xy}, nil, ""},
		{"scroll default amount", sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "left"}, nil, ""},
		{"scroll no direction", sandboxapi.DesktopAction{Action: "scroll", ScrollAmount: 2}, errdefs.ErrInvalid, "up, down, left or right"},
		{"scroll sideways", sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "diagonal"}, errdefs.ErrInvalid, "up, down, left or right"},
		{"scroll negative", sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "up", ScrollAmount: -1}, errdefs.ErrInvalid, "from 1 to 100"},
		{"scroll too far", sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "up", ScrollAmount: 101}, errdefs.ErrInvalid, "from 1 to 100"},
		{"scroll on click", sandboxapi.DesktopAction{Action: "left_click", ScrollDirection: "up"}, errdefs.ErrInvalid, "does not take scroll_direction"},
		{"wait", sandboxapi.DesktopAction{Action: "wait", Duration: 0.01}, nil, ""},
		{"wait zero", sandboxapi.DesktopAction{Action: "wait"}, errdefs.ErrInvalid, "needs duration"},
		{"wait negative", sandboxapi.DesktopAction{Action: "wait", Duration: -1}, errdefs.ErrInvalid, "more than 0"},
		{"wait an hour", sandboxapi.DesktopAction{Action: "wait", Duration: 3600}, errdefs.ErrInvalid, "at most 30"},
		{"cursor_position", sandboxapi.DesktopAction{Action: "cursor_position"}, nil, ""},
		{"cursor_position with coordinate", sandboxapi.DesktopAction{Action: "cursor_position", Coordinate: xy}, errdefs.ErrInvalid, "does not take coordinate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAction(tt.in)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("parseAction(%+v) = %v; want valid", tt.in, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("parseAction(%+v) = %v; want %v containing %q", tt.in, err, tt.want, tt.msg)
			}
		})
	}
}

func TestParseActionFields(t *testing.T) {
	a, err := parseAction(sandboxapi.DesktopAction{Action: "scroll", ScrollDirection: "up"})
	if err != nil || a.clicks != defaultScroll {
		t.Errorf("scroll without amount: clicks %d, %v; want %d", a.clicks, err, defaultScroll)
	}
	a, err = parseAction(sandboxapi.DesktopAction{Action: "key", Text: " ctrl+a  Delete "})
	if err != nil || strings.Join(a.keys, ",") != "ctrl+a,Delete" {
		t.Errorf("key sequence: %q, %v; want ctrl+a,Delete", a.keys, err)
	}
	a, err = parseAction(sandboxapi.DesktopAction{Action: "hold_key", Key: "a", Duration: 1.5})
	if err != nil || a.hold.Seconds() != 1.5 {
		t.Errorf("hold_key 1.5: %v, %v", a.hold, err)
	}
}

func TestActionsListEveryAction(t *testing.T) {
	got := strings.Join(Actions(), " ")
	for _, want := range []string{"key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
		"triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll", "hold_key", "wait", "cursor_position"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("Actions() = %s; lacks %s", got, want)
		}
	}
}
