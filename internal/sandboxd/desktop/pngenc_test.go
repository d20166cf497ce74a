package desktop

import (
	"bytes"
	"errors"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// TestEncodePNG round-trips images through EncodePNG and Go's PNG
// decoder: every pixel must survive, whatever the size (one pixel wide,
// several IDAT chunks) and however the encoder was used before (pooled).
func TestEncodePNG(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range []struct{ w, h int }{{1, 1}, {1, 50}, {7, 3}, {300, 200}, {640, 480}} {
		for _, noisy := range []bool{false, true} {
			img := screenLike(sz.w, sz.h)
			if noisy { // incompressible: many IDAT chunks
				for i := range img.Pix {
					if i%4 != 3 {
						img.Pix[i] = byte(r.IntN(256))
					}
				}
			}
			var buf bytes.Buffer
			if err := EncodePNG(&buf, img); err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(&buf)
			if err != nil {
				t.Fatalf("%dx%d: decode: %v", sz.w, sz.h, err)
			}
			if got.Bounds() != img.Bounds() {
				t.Fatalf("%dx%d: decoded %v", sz.w, sz.h, got.Bounds())
			}
			for y := range sz.h {
				for x := range sz.w {
					want := img.RGBAAt(x, y)
					if c := color.RGBAModel.Convert(got.At(x, y)).(color.RGBA); c != want {
						t.Fatalf("%dx%d noisy %v: pixel (%d,%d) = %v; want %v", sz.w, sz.h, noisy, x, y, c, want)
					}
				}
			}
		}
	}
}

// TestEncodePNGWriteError: a failing writer's error comes back.
func TestEncodePNGWriteError(t *testing.T) {
	boom := errors.New("boom")
	for _, after := range []int{0, 10, 40, 1000} {
		err := EncodePNG(&failWriter{left: after, err: boom}, screenLike(640, 480))
		if !errors.Is(err, boom) {
			t.Errorf("writer failing after %d bytes: %v; want boom", after, err)
		}
	}
}

type failWriter struct {
	left int
	err  error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return w.left, w.err
	}
	w.left -= len(p)
	return len(p), nil
}
