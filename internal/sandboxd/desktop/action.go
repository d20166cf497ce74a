package desktop

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb/xproto"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Limits of the actions.
const (
	MaxTypeBytes    = 4096 // text of one type action
	maxKeysBytes    = 256  // key names of one action
	MaxDuration     = 30.0 // seconds of wait and hold_key
	maxScrollAmount = 100
	defaultScroll   = 3
	dragSteps       = 8 // pointer motions between the ends of a drag
	typeDelayMS     = 8 // xdotool's delay between typed characters
)

// field names an optional field of an action, for validation.
type field int

const (
	fCoordinate field = 1 << iota
	fStart
	fText
	fKey // key names, from key or text
	fMods
	fScroll
	fDuration
)

// actionFields says which fields each action requires and which it also
// accepts.
var actionFields = map[string]struct{ need, may field }{
	sandboxapi.ActionKey:            {need: fKey},
	sandboxapi.ActionHoldKey:        {need: fKey | fDuration},
	sandboxapi.ActionType:           {need: fText},
	sandboxapi.ActionMouseMove:      {need: fCoordinate},
	sandboxapi.ActionLeftClick:      {may: fCoordinate | fMods},
	sandboxapi.ActionRightClick:     {may: fCoordinate | fMods},
	sandboxapi.ActionMiddleClick:    {may: fCoordinate | fMods},
	sandboxapi.ActionDoubleClick:    {may: fCoordinate | fMods},
	sandboxapi.ActionTripleClick:    {may: fCoordinate | fMods},
	sandboxapi.ActionLeftClickDrag:  {need: fCoordinate, may: fStart | fMods},
	sandboxapi.ActionLeftMouseDown:  {may: fCoordinate},
	sandboxapi.ActionLeftMouseUp:    {may: fCoordinate},
	sandboxapi.ActionScroll:         {need: fScroll, may: fCoordinate | fMods},
	sandboxapi.ActionWait:           {need: fDuration},
	sandboxapi.ActionCursorPosition: {},
}

// Actions lists the action names, sorted.
func Actions() []string {
	names := make([]string, 0, len(actionFields))
	for n := range actionFields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// action is a validated action.
type action struct {
	sandboxapi.DesktopAction
	keys   []string // key names (key, hold_key) or modifiers (clicks, scroll)
	at     *[2]int  // coordinate
	from   *[2]int  // start_coordinate
	hold   time.Duration
	clicks int // scroll clicks
}

// parseAction checks an action's shape: the name, the fields it needs,
// none it does not take, the limits. Coordinates are checked against the
// screen later.
func parseAction(in sandboxapi.DesktopAction) (*action, error) {
	spec, ok := actionFields[in.Action]
	if !ok {
		if in.Action == "" {
			return nil, errdefs.Invalidf("action is required (one of %s)", strings.Join(Actions(), ", "))
		}
		if in.Action == "screenshot" {
			return nil, errdefs.Invalidf("take screenshots with GET /v1/desktop/screenshot")
		}
		return nil, errdefs.Invalidf("unknown action %q (actions: %s)", in.Action, strings.Join(Actions(), ", "))
	}
	a := &action{DesktopAction: in}
	typing := spec.need&fText != 0
	takesKeys := (spec.need|spec.may)&(fKey|fMods) != 0
	// Key names come from key, or from text for actions that do not type
	// (Anthropic's tool puts them there).
	var keys string
	if typing {
		if in.Key != "" {
			return nil, errdefs.Invalidf("action %q does not take key", in.Action)
		}
	} else {
		if in.Key != "" && in.Text != "" && in.Key != in.Text {
			return nil, errdefs.Invalidf("give the keys as key or as text, not both")
		}
		keys = cmp.Or(in.Key, in.Text)
		if keys != "" && !takesKeys {
			return nil, errdefs.Invalidf("action %q does not take key or text", in.Action)
		}
	}
	has := field(0)
	if in.Coordinate != nil {
		has |= fCoordinate
	}
	if in.StartCoordinate != nil {
		has |= fStart
	}
	if typing && in.Text != "" {
		has |= fText
	}
	if keys != "" {
		has |= (spec.need | spec.may) & (fKey | fMods)
	}
	if in.ScrollDirection != "" || in.ScrollAmount != 0 {
		has |= fScroll
	}
	if in.Duration != 0 {
		has |= fDuration
	}
	for _, f := range []struct {
		f    field
		name string
	}{
		{fCoordinate, "coordinate"}, {fStart, "start_coordinate"}, {fText, "text"}, {fKey, "key (or text)"},
		{fScroll, "scroll_direction"}, {fDuration, "duration"},
	} {
		switch {
		case spec.need&f.f != 0 && has&f.f == 0:
			return nil, errdefs.Invalidf("action %q needs %s", in.Action, f.name)
		case (spec.need|spec.may)&f.f == 0 && has&f.f != 0:
			return nil, errdefs.Invalidf("action %q does not take %s", in.Action, f.name)
		}
	}
	var err error
	if a.at, err = point("coordinate", in.Coordinate); err != nil {
		return nil, err
	}
	if a.from, err = point("start_coordinate", in.StartCoordinate); err != nil {
		return nil, err
	}
	if keys != "" {
		if a.keys, err = keyNames(keys); err != nil {
			return nil, err
		}
	}
	if spec.need&fText != 0 {
		if err := checkText(in.Text); err != nil {
			return nil, err
		}
	}
	if has&fDuration != 0 {
		if math.IsNaN(in.Duration) || in.Duration <= 0 || in.Duration > MaxDuration {
			return nil, errdefs.Invalidf("duration must be more than 0 and at most %g seconds", MaxDuration)
		}
		a.hold = time.Duration(in.Duration * float64(time.Second))
	}
	if has&fScroll != 0 {
		switch in.ScrollDirection {
		case sandboxapi.ScrollUp, sandboxapi.ScrollDown, sandboxapi.ScrollLeft, sandboxapi.ScrollRight:
		default:
			return nil, errdefs.Invalidf("scroll_direction must be up, down, left or right")
		}
		a.clicks = in.ScrollAmount
		if a.clicks == 0 {
			a.clicks = defaultScroll
		}
		if a.clicks < 0 || a.clicks > maxScrollAmount {
			return nil, errdefs.Invalidf("scroll_amount must be from 1 to %d", maxScrollAmount)
		}
	}
	if spec.may&fMods != 0 {
		for _, k := range a.keys {
			for m := range strings.SplitSeq(k, "+") {
				if _, ok := modifierKeysyms[strings.ToLower(m)]; !ok {
					return nil, errdefs.Invalidf("%q is not a modifier key (shift, ctrl, alt, super, meta)", m)
				}
			}
		}
	}
	return a, nil
}

// point checks an [x, y] pair.
func point(name string, p []int) (*[2]int, error) {
	if p == nil {
		return nil, nil
	}
	if len(p) != 2 {
		return nil, errdefs.Invalidf("%s must be [x, y]", name)
	}
	return &[2]int{p[0], p[1]}, nil
}

// keyName is one xdotool key or combination: keysym names joined by "+".
var keyName = regexp.MustCompile(`^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$|^[!-~]$`)

// keyNames splits key names on spaces and checks each: xdotool's
// keysym names ("Return", "ctrl+shift+t", "KP_Enter") or one printable
// character.
func keyNames(s string) ([]string, error) {
	if len(s) > maxKeysBytes {
		return nil, errdefs.TooLargef("key names are at most %d bytes", maxKeysBytes)
	}
	names := strings.Fields(s)
	if len(names) == 0 {
		return nil, errdefs.Invalidf("no key names given")
	}
	for _, n := range names {
		if !keyName.MatchString(n) {
			return nil, errdefs.Invalidf("%q is not a key name (xdotool names: \"Return\", \"ctrl+c\", \"shift+Tab\")", n)
		}
	}
	return names, nil
}

// checkText checks the text of a type action.
func checkText(t string) error {
	switch {
	case len(t) > MaxTypeBytes:
		return errdefs.TooLargef("text is %d bytes; at most %d can be typed at once", len(t), MaxTypeBytes)
	case !utf8.ValidString(t):
		return errdefs.Invalidf("text is not valid UTF-8")
	case strings.ContainsRune(t, 0):
		return errdefs.Invalidf("text contains a NUL character")
	}
	return nil
}

// modifierKeysyms are the modifier keys a click or scroll may hold.
var modifierKeysyms = map[string]xproto.Keysym{
	"shift": 0xffe1, "shift_l": 0xffe1, "shift_r": 0xffe2,
	"ctrl": 0xffe3, "control": 0xffe3, "ctrl_l": 0xffe3, "control_l": 0xffe3, "ctrl_r": 0xffe4, "control_r": 0xffe4,
	"meta": 0xffe7, "meta_l": 0xffe7, "meta_r": 0xffe8,
	"alt": 0xffe9, "alt_l": 0xffe9, "alt_r": 0xffea,
	"super": 0xffeb, "super_l": 0xffeb, "super_r": 0xffec, "win": 0xffeb, "cmd": 0xffeb,
}

// Do performs a computer-use action on the running desktop and returns
// the pointer's position after it.
func (d *Desktop) Do(ctx context.Context, in sandboxapi.DesktopAction) (sandboxapi.DesktopActionResult, error) {
	var res sandboxapi.DesktopActionResult
	a, err := parseAction(in)
	if err != nil {
		return res, err
	}
	s, err := d.running()
	if err != nil {
		return res, err
	}
	for _, p := range []*[2]int{a.at, a.from} {
		if p != nil && (p[0] < 0 || p[1] < 0 || p[0] >= s.x.width || p[1] >= s.x.height) {
			return res, errdefs.Unprocessablef("(%d, %d) is outside the %dx%d screen", p[0], p[1], s.x.width, s.x.height)
		}
	}
	if err := s.perform(ctx, a); err != nil {
		return res, sessionErr(s, err, "the "+a.Action+" action")
	}
	err = s.x.do(ctx, func() error {
		x, y, err := s.x.pointer()
		res.Cursor = [2]int{x, y}
		return err
	})
	if err != nil {
		return res, sessionErr(s, err, "the "+a.Action+" action")
	}
	res.OK = true
	return res, nil
}

// perform runs a validated action.
func (s *session) perform(ctx context.Context, a *action) error {
	switch a.Action {
	case sandboxapi.ActionCursorPosition:
		return nil
	case sandboxapi.ActionWait:
		return sleep(ctx, a.hold)
	}
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	switch a.Action {
	case sandboxapi.ActionKey:
		return s.xdotool(ctx, append([]string{"key", "--"}, a.keys...)...)
	case sandboxapi.ActionType:
		return s.xdotool(ctx, "type", "--delay", fmt.Sprint(typeDelayMS), "--", a.Text)
	case sandboxapi.ActionHoldKey:
		if err := s.xdotool(ctx, append([]string{"keydown", "--"}, a.keys...)...); err != nil {
			return err
		}
		err := sleep(ctx, a.hold)
		// Release the keys even when the request is gone.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		rev := slices.Clone(a.keys)
		slices.Reverse(rev)
		return errors.Join(err, s.xdotool(rctx, append([]string{"keyup", "--"}, rev...)...))
	}
	return s.x.do(ctx, func() error { return s.pointerAction(a) })
}

// pointerAction runs a mouse action with XTest.
func (s *session) pointerAction(a *action) error {
	x := s.x
	mods, err := s.modifierCodes(a.keys)
	if err != nil {
		return err
	}
	for _, k := range mods {
		x.key(k, true)
	}
	defer func() {
		for _, k := range slices.Backward(mods) {
			x.key(k, false)
		}
	}()
	if a.Action == sandboxapi.ActionLeftClickDrag {
		return x.drag(a.from, *a.at)
	}
	if a.at != nil {
		x.move(a.at[0], a.at[1])
	}
	click := func(b byte, n int) {
		for range n {
			x.button(b, true)
			x.button(b, false)
		}
	}
	switch a.Action {
	case sandboxapi.ActionLeftClick:
		click(buttonLeft, 1)
	case sandboxapi.ActionRightClick:
		click(buttonRight, 1)
	case sandboxapi.ActionMiddleClick:
		click(buttonMiddle, 1)
	case sandboxapi.ActionDoubleClick:
		click(buttonLeft, 2)
	case sandboxapi.ActionTripleClick:
		click(buttonLeft, 3)
	case sandboxapi.ActionLeftMouseDown:
		x.button(buttonLeft, true)
	case sandboxapi.ActionLeftMouseUp:
		x.button(buttonLeft, false)
	case sandboxapi.ActionScroll:
		b := map[string]byte{sandboxapi.ScrollUp: wheelUp, sandboxapi.ScrollDown: wheelDown,
			sandboxapi.ScrollLeft: wheelLeft, sandboxapi.ScrollRight: wheelRight}[a.ScrollDirection]
		click(b, a.clicks)
	}
	return nil
}

// drag presses the left button at from (or where the pointer is), moves
// to the other end in steps so applications see the motion, and
// releases it there.
func (x *xconn) drag(from *[2]int, to [2]int) error {
	if from == nil {
		px, py, err := x.pointer()
		if err != nil {
			return err
		}
		from = &[2]int{px, py}
	}
	x.move(from[0], from[1])
	x.button(buttonLeft, true)
	for i := 1; i <= dragSteps; i++ {
		x.move(from[0]+(to[0]-from[0])*i/dragSteps, from[1]+(to[1]-from[1])*i/dragSteps)
	}
	x.button(buttonLeft, false)
	return nil
}

// modifierCodes maps modifier names ("ctrl+shift" or several) to keycodes.
func (s *session) modifierCodes(keys []string) ([]xproto.Keycode, error) {
	var codes []xproto.Keycode
	for _, k := range keys {
		for m := range strings.SplitSeq(k, "+") {
			code, ok := s.x.modifiers[modifierKeysyms[strings.ToLower(m)]]
			if !ok {
				return nil, errdefs.Unprocessablef("the keyboard has no %s key", m)
			}
			codes = append(codes, code)
		}
	}
	return codes, nil
}

// unknownKey is how xdotool reports a key name it does not know; it
// goes on with the others and exits 0.
var unknownKey = regexp.MustCompile(`No such key name '([^']*)'`)

// xdotool runs xdotool on the session's display.
func (s *session) xdotool(ctx context.Context, args ...string) error {
	bin, err := s.d.lookPath("xdotool")
	if err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "xdotool is not installed: keys and typing need it")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("xdotool %s: %w: %s", args[0], err, bytes.TrimSpace(out.Bytes()))
	}
	if m := unknownKey.FindSubmatch(out.Bytes()); m != nil {
		return errdefs.Unprocessablef("unknown key name %q (use xdotool names: \"Return\", \"ctrl+c\", \"Page_Down\")", m[1])
	}
	return nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
