package desktop

import (
	"context"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Windows lists the running desktop's top-level windows, bottom of the
// stack first. With a window manager these are the windows it manages
// (_NET_CLIENT_LIST_STACKING); without one, the mapped children of the
// root window. A window that disappears while it is being described is
// left out.
func (d *Desktop) Windows(ctx context.Context) ([]sandboxapi.DesktopWindow, error) {
	s, err := d.running()
	if err != nil {
		return nil, err
	}
	var list []sandboxapi.DesktopWindow
	err = s.x.do(ctx, func() error {
		var err error
		list, err = s.x.windows()
		return err
	})
	if err != nil {
		return nil, sessionErr(s, err, "the window list")
	}
	return list, nil
}

func (x *xconn) windows() ([]sandboxapi.DesktopWindow, error) {
	ids, managed, err := x.topLevel()
	if err != nil {
		return nil, err
	}
	active, _ := x.windowProperty(x.root, "_NET_ACTIVE_WINDOW")
	if active == 0 {
		if f, err := xproto.GetInputFocus(x.c).Reply(); err == nil && f.Focus > xproto.InputFocusPointerRoot {
			active = f.Focus
		}
	}
	out := make([]sandboxapi.DesktopWindow, 0, len(ids))
	for _, id := range ids {
		w, ok := x.describe(id, managed)
		if !ok {
			continue
		}
		w.Focused = id == active
		out = append(out, w)
	}
	return out, nil
}

// topLevel returns the client windows, and whether a window manager
// listed them.
func (x *xconn) topLevel() ([]xproto.Window, bool, error) {
	for _, name := range []string{"_NET_CLIENT_LIST_STACKING", "_NET_CLIENT_LIST"} {
		r, err := x.property(x.root, name)
		if err != nil {
			return nil, false, err
		}
		if r != nil && r.Format == 32 {
			ids := make([]xproto.Window, 0, len(r.Value)/4)
			for i := 0; i+4 <= len(r.Value); i += 4 {
				ids = append(ids, xproto.Window(xgb.Get32(r.Value[i:])))
			}
			return ids, true, nil
		}
	}
	tree, err := xproto.QueryTree(x.c, x.root).Reply()
	if err != nil {
		return nil, false, err
	}
	return tree.Children, false, nil
}

// describe reads a window's title and geometry. Without a window manager
// only mapped, ordinary windows count.
func (x *xconn) describe(id xproto.Window, managed bool) (sandboxapi.DesktopWindow, bool) {
	if !managed {
		attrs, err := xproto.GetWindowAttributes(x.c, id).Reply()
		if err != nil || attrs.MapState != xproto.MapStateViewable || attrs.OverrideRedirect {
			return sandboxapi.DesktopWindow{}, false
		}
	}
	geo, err := xproto.GetGeometry(x.c, xproto.Drawable(id)).Reply()
	if err != nil {
		return sandboxapi.DesktopWindow{}, false
	}
	pos, err := xproto.TranslateCoordinates(x.c, id, x.root, 0, 0).Reply()
	if err != nil {
		return sandboxapi.DesktopWindow{}, false
	}
	return sandboxapi.DesktopWindow{
		ID:     uint32(id),
		Title:  x.title(id),
		X:      int(pos.DstX),
		Y:      int(pos.DstY),
		Width:  int(geo.Width),
		Height: int(geo.Height),
	}, true
}

// title is a window's _NET_WM_NAME (UTF-8), else its WM_NAME.
func (x *xconn) title(id xproto.Window) string {
	for _, name := range []string{"_NET_WM_NAME", "WM_NAME"} {
		if r, err := x.property(id, name); err == nil && r != nil && r.Format == 8 && len(r.Value) > 0 {
			if utf8.Valid(r.Value) {
				return string(r.Value)
			}
			return latin1(r.Value) // WM_NAME is STRING: ISO 8859-1
		}
	}
	return ""
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}
