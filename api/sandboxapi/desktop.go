package sandboxapi

import "time"

// DesktopStartRequest is the body of POST /v1/desktop/start. Zero fields
// take the defaults: 1280×800, depth 24, 96 DPI.
type DesktopStartRequest struct {
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	Depth  int `json:"depth,omitempty"` // 16 or 24
	DPI    int `json:"dpi,omitempty"`
}

// DesktopStatus is the body of GET /v1/desktop/status and of a start. A
// stopped desktop has only Running (false); VNC says whether the VNC
// server runs, so GET /v1/desktop/vnc can be used.
type DesktopStatus struct {
	Running   bool       `json:"running"`
	Display   string     `json:"display,omitempty"` // ":1", the DISPLAY for programs
	Width     int        `json:"width,omitempty"`
	Height    int        `json:"height,omitempty"`
	Depth     int        `json:"depth,omitempty"`
	DPI       int        `json:"dpi,omitempty"`
	VNC       bool       `json:"vnc"`
	StartedAt *time.Time `json:"started_at,omitempty"`
}

// The actions of POST /v1/desktop/action, modelled on Anthropic's
// computer-use tool.
const (
	ActionKey            = "key"             // key (or text): xdotool key names, "ctrl+c", "Return"; several separated by spaces
	ActionHoldKey        = "hold_key"        // key (or text) held down for duration seconds
	ActionType           = "type"            // text typed as it is
	ActionMouseMove      = "mouse_move"      // coordinate
	ActionLeftClick      = "left_click"      // at coordinate, or where the pointer is; key (or text): modifiers held
	ActionRightClick     = "right_click"     // as left_click
	ActionMiddleClick    = "middle_click"    // as left_click
	ActionDoubleClick    = "double_click"    // as left_click
	ActionTripleClick    = "triple_click"    // as left_click
	ActionLeftClickDrag  = "left_click_drag" // from start_coordinate (or the pointer) to coordinate
	ActionLeftMouseDown  = "left_mouse_down" // at coordinate, or where the pointer is
	ActionLeftMouseUp    = "left_mouse_up"   // as left_mouse_down
	ActionScroll         = "scroll"          // scroll_direction, scroll_amount clicks (3 by default), at coordinate
	ActionWait           = "wait"            // sleep duration seconds
	ActionCursorPosition = "cursor_position" // only report the pointer
)

// Scroll directions.
const (
	ScrollUp    = "up"
	ScrollDown  = "down"
	ScrollLeft  = "left"
	ScrollRight = "right"
)

// DesktopAction is the body of POST /v1/desktop/action. Coordinates are
// [x, y] screen pixels from the top left corner.
type DesktopAction struct {
	Action          string  `json:"action"`
	Coordinate      []int   `json:"coordinate,omitempty"`
	StartCoordinate []int   `json:"start_coordinate,omitempty"`
	Text            string  `json:"text,omitempty"`
	Key             string  `json:"key,omitempty"`
	ScrollDirection string  `json:"scroll_direction,omitempty"`
	ScrollAmount    int     `json:"scroll_amount,omitempty"`
	Duration        float64 `json:"duration,omitempty"` // seconds
}

// DesktopActionResult answers an action: the pointer position after it.
type DesktopActionResult struct {
	OK     bool   `json:"ok"`
	Cursor [2]int `json:"cursor"`
}

// DesktopWindow is one top-level window.
type DesktopWindow struct {
	ID      uint32 `json:"id"` // the X window id (as xdotool prints it)
	Title   string `json:"title"`
	X       int    `json:"x"`
	Y       int    `json:"y"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Focused bool   `json:"focused"`
}

// DesktopWindowList is the body of GET /v1/desktop/windows, bottom of the
// stack first.
type DesktopWindowList struct {
	Windows []DesktopWindow `json:"windows"`
}
