package desktop

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// The screenshot path in pieces, at 1280×800 (the daemon's benchmarks in
// internal/sandboxd measure it end to end):
//
//	go test -run - -bench . ./internal/sandboxd/desktop/

// BenchmarkCapture is X GetImage plus the conversion to RGBA.
func BenchmarkCapture(b *testing.B) {
	d := newDesktop(b)
	if _, _, err := d.Start(context.Background(), sandboxapi.DesktopStartRequest{Width: 1280, Height: 800}); err != nil {
		b.Fatal(err)
	}
	s := d.session()
	for b.Loop() {
		if _, err := s.x.capture(0, 0, 1280, 800); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodePNG encodes a screen-like image: flat areas and text-like
// noise.
func BenchmarkEncodePNG(b *testing.B) {
	img := screenLike(1280, 800)
	var out countWriter
	for b.Loop() {
		out = 0
		if err := EncodePNG(&out, img); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out), "png-bytes")
}

// BenchmarkEncodeStdlibPNG is image/png at BestSpeed on the same image,
// for comparison.
func BenchmarkEncodeStdlibPNG(b *testing.B) {
	img := screenLike(1280, 800)
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	var out countWriter
	for b.Loop() {
		out = 0
		if err := enc.Encode(&out, img); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out), "png-bytes")
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// BenchmarkScaleHalf is the area-average resize to 640×400.
func BenchmarkScaleHalf(b *testing.B) {
	img := screenLike(1280, 800)
	for b.Loop() {
		scale(img, 640, 400)
	}
}

// screenLike draws windows (flat rectangles) with lines of "text".
func screenLike(w, h int) *image.RGBA {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bg := color.RGBA{0x2e, 0x34, 0x40, 0xff}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = bg.R, bg.G, bg.B, bg.A
	}
	for range 6 {
		x0, y0 := r.IntN(w/2+1), r.IntN(h/2+1)
		x1, y1 := x0+200+r.IntN(w/2+1), y0+150+r.IntN(h/2+1)
		for y := y0; y < min(y1, h); y++ {
			for x := x0; x < min(x1, w); x++ {
				c := color.RGBA{0xfa, 0xfa, 0xfa, 0xff}
				if (y-y0)%16 < 11 && (y-y0)%16 > 2 && r.IntN(3) == 0 {
					c = color.RGBA{0x20, 0x20, 0x20, 0xff}
				}
				img.SetRGBA(x, y, c)
			}
		}
	}
	return img
}
