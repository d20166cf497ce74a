package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/llm"
)

// Computer drives the sandbox's virtual display with Anthropic's
// computer-use action set (sandboxd /v1/desktop/*). The display starts on
// first use; every action answers with a screenshot, so the model sees
// what it did.
type Computer struct {
	env *Env

	mu      sync.Mutex
	started bool
}

// NewComputer returns the computer tool of env.
func NewComputer(env *Env) *Computer { return &Computer{env: env} }

// Spec implements Tool.
func (c *Computer) Spec() llm.Tool {
	return llm.Tool{Name: "computer", Description: "Use the sandbox's graphical desktop (1280x800) with the mouse and keyboard. " +
		"Actions: screenshot; key (xdotool key names, e.g. \"ctrl+s\", \"Return\"); hold_key (key, duration); type (text); " +
		"mouse_move, left_click, right_click, middle_click, double_click, triple_click (coordinate [x, y]; optional key: modifiers held); " +
		"left_click_drag (start_coordinate to coordinate); left_mouse_down, left_mouse_up; scroll (scroll_direction up|down|left|right, " +
		"scroll_amount, at coordinate); wait (duration seconds); cursor_position. Each action returns a screenshot. " +
		"Programs started with bash show on the display when DISPLAY is set (the result of the first action says its value).",
		Schema: json.RawMessage(`{"type":"object","properties":{
"action":{"type":"string","enum":["screenshot","key","hold_key","type","mouse_move","left_click","right_click","middle_click","double_click","triple_click","left_click_drag","left_mouse_down","left_mouse_up","scroll","wait","cursor_position"]},
"coordinate":{"type":"array","items":{"type":"integer","minimum":0},"minItems":2,"maxItems":2},
"start_coordinate":{"type":"array","items":{"type":"integer","minimum":0},"minItems":2,"maxItems":2},
"text":{"type":"string"},
"key":{"type":"string"},
"scroll_direction":{"type":"string","enum":["up","down","left","right"]},
"scroll_amount":{"type":"integer","minimum":1,"maximum":50},
"duration":{"type":"number","minimum":0,"maximum":60}},
"required":["action"],"additionalProperties":false}`)}
}

// Available reports whether the sandbox has a desktop.
func (c *Computer) Available(ctx context.Context) bool {
	_, err := c.env.Sandbox.DesktopStatus(ctx)
	return err == nil
}

// Run implements Tool.
func (c *Computer) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	var a sandboxapi.DesktopAction
	if err := decode(input, &a); err != nil {
		return Result{}, err
	}
	note, err := c.ensure(ctx)
	if err != nil {
		return requestError(err, "the desktop")
	}
	out := note
	if a.Action != "screenshot" {
		res, err := c.env.Sandbox.DesktopAction(ctx, a)
		if err != nil {
			return requestError(err, "the "+a.Action+" action")
		}
		out += fmt.Sprintf("%s done; the pointer is at (%d, %d).", a.Action, res.Cursor[0], res.Cursor[1])
		if a.Action == "cursor_position" {
			return Result{Output: out}, nil
		}
	}
	png, err := c.env.Sandbox.DesktopScreenshot(ctx, client.ScreenshotOptions{})
	if err != nil {
		return requestError(err, "the screenshot")
	}
	if out == "" {
		out = "screenshot attached"
	}
	return Result{Output: out, Images: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Data: png}}}, nil
}

// ensure starts the display once per run.
func (c *Computer) ensure(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return "", nil
	}
	st, err := c.env.Sandbox.StartDesktop(ctx, sandboxapi.DesktopStartRequest{Width: 1280, Height: 800})
	if err != nil {
		return "", err
	}
	c.started = true
	return fmt.Sprintf("[the desktop runs on DISPLAY=%s, %dx%d]\n", st.Display, st.Width, st.Height), nil
}

// requestError turns a refused request into an observation; a sandbox
// that does not answer stays an error.
func requestError(err error, what string) (Result, error) {
	for _, class := range []error{client.ErrInvalid, client.ErrNotFound, client.ErrConflict, client.ErrUnprocessable,
		client.ErrForbidden, client.ErrTooLarge, client.ErrTimeout} {
		if errors.Is(err, class) {
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Detail != "" {
				return Errorf("%s failed: %s", what, ae.Detail), nil
			}
			return Errorf("%s failed: %v", what, err), nil
		}
	}
	return Result{}, err
}
