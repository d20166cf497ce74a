package desktop

import (
	"errors"
	"image"
	"image/color"
	"math"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestRegionResolve(t *testing.T) {
	const w, h = 1280, 800
	tests := []struct {
		name   string
		in     Region
		want   Region
		dw, dh int
		err    error
		msg    string
	}{
		{"whole screen", Region{}, Region{0, 0, w, h, 1}, w, h, nil, ""},
		{"to the edge", Region{X: 1000, Y: 700}, Region{1000, 700, 280, 100, 1}, 280, 100, nil, ""},
		{"box", Region{10, 20, 30, 40, 0}, Region{10, 20, 30, 40, 1}, 30, 40, nil, ""},
		{"half", Region{Scale: 0.5}, Region{0, 0, w, h, 0.5}, 640, 400, nil, ""},
		{"zoom", Region{0, 0, 10, 10, 4}, Region{0, 0, 10, 10, 4}, 40, 40, nil, ""},
		{"tiny scale keeps a pixel", Region{0, 0, 10, 10, 0.001}, Region{0, 0, 10, 10, 0.001}, 1, 1, nil, ""},
		{"negative", Region{X: -1}, Region{}, 0, 0, errdefs.ErrInvalid, "negative"},
		{"negative size", Region{Width: -5}, Region{}, 0, 0, errdefs.ErrInvalid, "negative"},
		{"off the right", Region{X: 1200, Width: 100}, Region{}, 0, 0, errdefs.ErrUnprocessable, "not inside the 1280x800 screen"},
		{"starts outside", Region{X: 1280}, Region{}, 0, 0, errdefs.ErrUnprocessable, "not inside"},
		{"too tall", Region{Height: 801}, Region{}, 0, 0, errdefs.ErrUnprocessable, "not inside"},
		{"scale zero is one", Region{Scale: 0}, Region{0, 0, w, h, 1}, w, h, nil, ""},
		{"scale negative", Region{Scale: -1}, Region{}, 0, 0, errdefs.ErrInvalid, "scale"},
		{"scale NaN", Region{Scale: math.NaN()}, Region{}, 0, 0, errdefs.ErrInvalid, "scale"},
		{"scale too big", Region{Scale: 5}, Region{}, 0, 0, errdefs.ErrInvalid, "scale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, dw, dh, err := tt.in.resolve(w, h)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("resolve(%+v) = %v; want %v containing %q", tt.in, err, tt.err, tt.msg)
				}
				return
			}
			if err != nil || got != tt.want || dw != tt.dw || dh != tt.dh {
				t.Fatalf("resolve(%+v) = %+v %dx%d, %v; want %+v %dx%d", tt.in, got, dw, dh, err, tt.want, tt.dw, tt.dh)
			}
		})
	}
}

func TestToRGBA(t *testing.T) {
	want := []color.RGBA{{0xff, 0, 0, 0xff}, {0, 0xff, 0, 0xff}, {0, 0, 0xff, 0xff}, {0x12, 0x34, 0x56, 0xff}}
	tests := []struct {
		name string
		f    pixelFormat
		data []byte // one row of the four pixels
		// approx allows the loss of a 5- or 6-bit channel.
		approx bool
	}{
		{"BGRX little-endian", pixelFormat{depth: 24, bpp: 32, pad: 32, red: 0xff0000, green: 0xff00, blue: 0xff, lsbFirst: true, standard32: true},
			[]byte{0, 0, 0xff, 0, 0, 0xff, 0, 0, 0xff, 0, 0, 0, 0x56, 0x34, 0x12, 0}, false},
		{"XRGB big-endian (generic)", pixelFormat{depth: 24, bpp: 32, pad: 32, red: 0xff0000, green: 0xff00, blue: 0xff},
			[]byte{0, 0xff, 0, 0, 0, 0, 0xff, 0, 0, 0, 0, 0xff, 0, 0x12, 0x34, 0x56}, false},
		{"RGB 24 bpp packed (generic)", pixelFormat{depth: 24, bpp: 24, pad: 32, red: 0xff0000, green: 0xff00, blue: 0xff, lsbFirst: true},
			[]byte{0, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0, 0x56, 0x34, 0x12}, false},
		{"RGB565", pixelFormat{depth: 16, bpp: 16, pad: 32, red: 0xf800, green: 0x7e0, blue: 0x1f, lsbFirst: true, std16: true},
			[]byte{0x00, 0xf8, 0xe0, 0x07, 0x1f, 0x00, 0xaa, 0x11}, true},
		{"RGB565 (generic)", pixelFormat{depth: 16, bpp: 16, pad: 32, red: 0xf800, green: 0x7e0, blue: 0x1f, lsbFirst: true},
			[]byte{0x00, 0xf8, 0xe0, 0x07, 0x1f, 0x00, 0xaa, 0x11}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Two rows, to exercise the stride.
			img, err := tt.f.toRGBA(append(append([]byte(nil), tt.data...), tt.data...), 4, 2)
			if err != nil {
				t.Fatal(err)
			}
			for y := range 2 {
				for x, w := range want {
					got := img.RGBAAt(x, y)
					if tt.approx {
						if diff(got.R, w.R) > 8 || diff(got.G, w.G) > 4 || diff(got.B, w.B) > 8 {
							t.Errorf("pixel (%d,%d) = %v; want about %v", x, y, got, w)
						}
					} else if got != w {
						t.Errorf("pixel (%d,%d) = %v; want %v", x, y, got, w)
					}
				}
			}
		})
	}
	if _, err := tests[0].f.toRGBA(make([]byte, 10), 4, 2); err == nil {
		t.Error("short data: no error")
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestScale(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 4, 2))
	// Left half black, right half white.
	for y := range 2 {
		for x := range 4 {
			c := color.RGBA{0, 0, 0, 0xff}
			if x >= 2 {
				c = color.RGBA{0xff, 0xff, 0xff, 0xff}
			}
			src.SetRGBA(x, y, c)
		}
	}
	half := scale(src, 2, 1)
	if got := half.RGBAAt(0, 0); got != (color.RGBA{0, 0, 0, 0xff}) {
		t.Errorf("half (0,0) = %v; want black", got)
	}
	if got := half.RGBAAt(1, 0); got != (color.RGBA{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("half (1,0) = %v; want white", got)
	}
	one := scale(src, 1, 1)
	if got := one.RGBAAt(0, 0); got.R < 0x7e || got.R > 0x80 {
		t.Errorf("one pixel = %v; want mid grey", got)
	}
	double := scale(src, 8, 4)
	if double.Rect.Dx() != 8 || double.Rect.Dy() != 4 || double.RGBAAt(3, 3).R != 0 || double.RGBAAt(4, 0).R != 0xff {
		t.Errorf("double: %v, (3,3) %v, (4,0) %v", double.Rect, double.RGBAAt(3, 3), double.RGBAAt(4, 0))
	}
	odd := scale(src, 3, 2)
	if odd.Rect.Dx() != 3 || odd.Rect.Dy() != 2 {
		t.Errorf("odd: %v", odd.Rect)
	}
}
