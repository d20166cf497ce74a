package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// xconn is this daemon's connection to a session's X server: the screen's
// geometry and pixel format, and the atoms it has looked up. xgb's Conn is
// safe for concurrent use; atoms has its own lock.
//
// One goroutine reads the events and errors the server sends us (errors
// of unchecked requests such as XTest input arrive that way) so xgb's
// queue never fills; it ends when the connection is closed.
type xconn struct {
	c      *xgb.Conn
	root   xproto.Window
	width  int
	height int
	format pixelFormat
	// modifiers maps a modifier keysym to its keycode, for clicks with
	// modifiers held.
	modifiers map[xproto.Keysym]xproto.Keycode
	// shm captures through shared memory; nil where MIT-SHM cannot be
	// used.
	shm *shmImage

	atomsMu sync.Mutex
	atoms   map[string]xproto.Atom

	drained chan struct{} // closed when the event reader has ended
}

// quietXGB silences xgb's package logger (it would print to stderr on
// every connection without an X authority file, and when a server goes
// away), once, before the first connection.
var quietXGB sync.Once

// dialX connects to display and reads the screen's setup.
func dialX(display string, cfg screen) (*xconn, error) {
	quietXGB.Do(func() { xgb.Logger = log.New(io.Discard, "", 0) })
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, err
	}
	x := &xconn{c: c, atoms: map[string]xproto.Atom{}, drained: make(chan struct{})}
	go x.drain()
	if err := x.setup(cfg); err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

func (x *xconn) setup(cfg screen) error {
	if err := xtest.Init(x.c); err != nil {
		return fmt.Errorf("XTEST extension: %w", err)
	}
	setup := xproto.Setup(x.c)
	scr := setup.DefaultScreen(x.c)
	x.root = scr.Root
	x.width, x.height = int(scr.WidthInPixels), int(scr.HeightInPixels)
	if x.width != cfg.width || x.height != cfg.height {
		return fmt.Errorf("screen is %dx%d, want %dx%d", x.width, x.height, cfg.width, cfg.height)
	}
	f, err := rootFormat(setup, scr)
	if err != nil {
		return err
	}
	x.format = f
	if err := x.loadModifiers(setup); err != nil {
		return err
	}
	if s, err := x.attachSHM(); err == nil {
		x.shm = s
	}
	return nil
}

// drain reads events and errors until the connection closes.
func (x *xconn) drain() {
	defer close(x.drained)
	for {
		ev, err := x.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
	}
}

// close closes the connection and waits for the event reader.
func (x *xconn) close() {
	x.c.Close()
	<-x.drained
	if x.shm != nil {
		x.shm.detach()
	}
}

// do runs fn, a sequence of X requests, and waits for it or for ctx.
// An X server that stops answering cannot hang a request: fn's goroutine
// then ends when the session closes the connection.
func (x *xconn) do(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// atom returns the atom named name, looking it up once.
func (x *xconn) atom(name string) (xproto.Atom, error) {
	x.atomsMu.Lock()
	a, ok := x.atoms[name]
	x.atomsMu.Unlock()
	if ok {
		return a, nil
	}
	r, err := xproto.InternAtom(x.c, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	x.atomsMu.Lock()
	x.atoms[name] = r.Atom
	x.atomsMu.Unlock()
	return r.Atom, nil
}

// property returns a window's property (at most 64 KiB of it); nil when
// the window has none.
func (x *xconn) property(w xproto.Window, name string) (*xproto.GetPropertyReply, error) {
	a, err := x.atom(name)
	if err != nil {
		return nil, err
	}
	r, err := xproto.GetProperty(x.c, false, w, a, xproto.GetPropertyTypeAny, 0, 16<<10).Reply()
	if err != nil {
		return nil, err
	}
	if r == nil || r.Format == 0 {
		return nil, nil
	}
	return r, nil
}

// windowProperty returns a WINDOW-valued property's first window; 0 when
// there is none.
func (x *xconn) windowProperty(w xproto.Window, name string) (xproto.Window, error) {
	r, err := x.property(w, name)
	if err != nil || r == nil || r.Format != 32 || len(r.Value) < 4 {
		return 0, err
	}
	return xproto.Window(xgb.Get32(r.Value)), nil
}

// waitWM waits until a window manager has taken the screen (it sets
// _NET_SUPPORTING_WM_CHECK on the root window), the window manager exits
// (wmDone), ctx ends or timeout passes. It polls: a property round trip
// every 20 ms costs the X server nothing.
func (x *xconn) waitWM(ctx context.Context, timeout time.Duration, wmDone <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if w, err := x.windowProperty(x.root, "_NET_SUPPORTING_WM_CHECK"); err == nil && w != 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-wmDone:
			return false
		case <-tick.C:
		}
	}
}

// pointer returns the pointer's position on the screen.
func (x *xconn) pointer() (int, int, error) {
	r, err := xproto.QueryPointer(x.c, x.root).Reply()
	if err != nil {
		return 0, 0, fmt.Errorf("query pointer: %w", err)
	}
	return int(r.RootX), int(r.RootY), nil
}

// XTest event types and pointer buttons.
const (
	buttonLeft   = 1
	buttonMiddle = 2
	buttonRight  = 3
	wheelUp      = 4
	wheelDown    = 5
	wheelLeft    = 6
	wheelRight   = 7
)

// move moves the pointer to (px, py).
func (x *xconn) move(px, py int) { x.fake(xproto.MotionNotify, 0, px, py) }

// button presses (down) or releases a pointer button.
func (x *xconn) button(b byte, down bool) {
	t := byte(xproto.ButtonRelease)
	if down {
		t = xproto.ButtonPress
	}
	x.fake(t, b, 0, 0)
}

// key presses or releases a key by keycode.
func (x *xconn) key(k xproto.Keycode, down bool) {
	t := byte(xproto.KeyRelease)
	if down {
		t = xproto.KeyPress
	}
	x.fake(t, byte(k), 0, 0)
}

// fake sends one XTest event without waiting: the next request with a
// reply (every action ends with QueryPointer) comes back after the server
// has processed it, and an error goes to the event reader.
func (x *xconn) fake(typ, detail byte, px, py int) {
	root := xproto.Window(0)
	if typ == xproto.MotionNotify {
		root = x.root
	}
	xtest.FakeInput(x.c, typ, detail, 0, root, int16(px), int16(py), 0)
}

// loadModifiers finds the keycodes of the modifier keys in the keyboard
// mapping.
func (x *xconn) loadModifiers(setup *xproto.SetupInfo) error {
	first, last := setup.MinKeycode, setup.MaxKeycode
	r, err := xproto.GetKeyboardMapping(x.c, first, byte(last-first+1)).Reply()
	if err != nil {
		return fmt.Errorf("keyboard mapping: %w", err)
	}
	want := map[xproto.Keysym]bool{}
	for _, sym := range modifierKeysyms {
		want[sym] = true
	}
	x.modifiers = map[xproto.Keysym]xproto.Keycode{}
	per := int(r.KeysymsPerKeycode)
	for i, sym := range r.Keysyms {
		if !want[sym] || per == 0 {
			continue
		}
		code := xproto.Keycode(int(first) + i/per)
		if _, ok := x.modifiers[sym]; !ok {
			x.modifiers[sym] = code
		}
	}
	return nil
}

// pixelFormat describes the root window's pixels as GetImage returns them.
type pixelFormat struct {
	depth, bpp, pad   int    // bits per pixel, scanline pad in bits
	red, green, blue  uint32 // channel masks
	lsbFirst          bool   // image byte order
	standard32, std16 bool   // fast paths: BGRX 8:8:8 and RGB 5:6:5, little-endian
}

// rootFormat reads the pixel format of the root window's visual.
func rootFormat(setup *xproto.SetupInfo, scr *xproto.ScreenInfo) (pixelFormat, error) {
	f := pixelFormat{depth: int(scr.RootDepth), lsbFirst: setup.ImageByteOrder == xproto.ImageOrderLSBFirst}
	for _, pf := range setup.PixmapFormats {
		if int(pf.Depth) == f.depth {
			f.bpp, f.pad = int(pf.BitsPerPixel), int(pf.ScanlinePad)
		}
	}
	for _, d := range scr.AllowedDepths {
		for _, v := range d.Visuals {
			if v.VisualId == scr.RootVisual {
				f.red, f.green, f.blue = v.RedMask, v.GreenMask, v.BlueMask
			}
		}
	}
	if f.red == 0 || f.green == 0 || f.blue == 0 || (f.bpp != 16 && f.bpp != 24 && f.bpp != 32) {
		return f, errors.New("the root visual is not a TrueColor visual of 16, 24 or 32 bits per pixel")
	}
	f.standard32 = f.lsbFirst && f.bpp == 32 && f.red == 0xff0000 && f.green == 0xff00 && f.blue == 0xff
	f.std16 = f.lsbFirst && f.bpp == 16 && f.red == 0xf800 && f.green == 0x7e0 && f.blue == 0x1f
	return f, nil
}
