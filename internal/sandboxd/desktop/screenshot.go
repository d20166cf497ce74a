package desktop

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"math/bits"

	"github.com/jezek/xgb/xproto"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Limits of a screenshot.
const (
	maxScale     = 4
	maxImageSide = 16384
)

// Region is the part of the screen a screenshot captures and the scale
// of the image. Zero Width or Height reach the screen's edge; zero Scale
// is 1.
type Region struct {
	X, Y          int
	Width, Height int
	Scale         float64
}

// Screenshot captures a region of the running desktop's screen.
func (d *Desktop) Screenshot(ctx context.Context, r Region) (*image.RGBA, error) {
	s, err := d.running()
	if err != nil {
		return nil, err
	}
	r, dw, dh, err := r.resolve(s.x.width, s.x.height)
	if err != nil {
		return nil, err
	}
	var img *image.RGBA
	err = s.x.do(ctx, func() error {
		var err error
		img, err = s.x.capture(r.X, r.Y, r.Width, r.Height)
		return err
	})
	if err != nil {
		return nil, sessionErr(s, err, "the screenshot")
	}
	if dw != r.Width || dh != r.Height {
		img = scale(img, dw, dh)
	}
	return img, nil
}

// resolve checks r against a width×height screen, fills in its zero
// fields, and returns the size of the image.
func (r Region) resolve(width, height int) (Region, int, int, error) {
	if r.X < 0 || r.Y < 0 || r.Width < 0 || r.Height < 0 {
		return r, 0, 0, errdefs.Invalidf("x, y, w and h must not be negative")
	}
	if r.Width == 0 {
		r.Width = width - r.X
	}
	if r.Height == 0 {
		r.Height = height - r.Y
	}
	if r.X >= width || r.Y >= height || r.X+r.Width > width || r.Y+r.Height > height || r.Width <= 0 || r.Height <= 0 {
		return r, 0, 0, errdefs.Unprocessablef("the region %dx%d at (%d,%d) is not inside the %dx%d screen",
			r.Width, r.Height, r.X, r.Y, width, height)
	}
	if r.Scale == 0 {
		r.Scale = 1
	}
	if math.IsNaN(r.Scale) || r.Scale <= 0 || r.Scale > maxScale {
		return r, 0, 0, errdefs.Invalidf("scale must be more than 0 and at most %d", maxScale)
	}
	dw := max(1, int(math.Round(float64(r.Width)*r.Scale)))
	dh := max(1, int(math.Round(float64(r.Height)*r.Scale)))
	if dw > maxImageSide || dh > maxImageSide {
		return r, 0, 0, errdefs.Invalidf("the image would be %dx%d; at most %d pixels a side", dw, dh, maxImageSide)
	}
	return r, dw, dh, nil
}

// capture reads a rectangle of the root window, through shared memory
// when it can.
func (x *xconn) capture(px, py, w, h int) (*image.RGBA, error) {
	if x.shm != nil {
		if img, ok, err := x.shm.capture(x, px, py, w, h); ok {
			return img, err
		}
	}
	reply, err := xproto.GetImage(x.c, xproto.ImageFormatZPixmap, xproto.Drawable(x.root),
		int16(px), int16(py), uint16(w), uint16(h), math.MaxUint32).Reply()
	if err != nil {
		return nil, fmt.Errorf("get image: %w", err)
	}
	return x.format.toRGBA(reply.Data, w, h)
}

// toRGBA converts a ZPixmap image of w×h pixels in format f.
func (f pixelFormat) toRGBA(data []byte, w, h int) (*image.RGBA, error) {
	stride := f.stride(w)
	if len(data) < stride*h {
		return nil, fmt.Errorf("image data is %d bytes, want %d", len(data), stride*h)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		src := data[y*stride : y*stride+stride]
		dst := img.Pix[y*img.Stride : y*img.Stride+w*4]
		switch {
		case f.standard32:
			for i := 0; i < w*4; i += 4 {
				s := src[i : i+4 : i+4]
				d := dst[i : i+4 : i+4]
				d[0], d[1], d[2], d[3] = s[2], s[1], s[0], 0xff
			}
		case f.std16:
			for i := range w {
				p := uint32(src[2*i]) | uint32(src[2*i+1])<<8
				d := dst[4*i : 4*i+4 : 4*i+4]
				r, g, b := p>>11&0x1f, p>>5&0x3f, p&0x1f
				d[0], d[1], d[2], d[3] = byte(r<<3|r>>2), byte(g<<2|g>>4), byte(b<<3|b>>2), 0xff
			}
		default:
			f.convertRow(dst, src, w)
		}
	}
	return img, nil
}

// stride is the length in bytes of an image row w pixels wide.
func (f pixelFormat) stride(w int) int {
	return (w*f.bpp + f.pad - 1) / f.pad * f.pad / 8
}

// convertRow converts one row of any TrueColor format, pixel by pixel.
func (f pixelFormat) convertRow(dst, src []byte, w int) {
	n := f.bpp / 8
	var buf [4]byte
	for i := range w {
		p := src[i*n : i*n+n]
		copy(buf[:], p)
		var v uint32
		if f.lsbFirst {
			v = binary.LittleEndian.Uint32(buf[:])
		} else {
			v = binary.BigEndian.Uint32(buf[:]) >> (32 - 8*n)
		}
		d := dst[4*i : 4*i+4 : 4*i+4]
		d[0], d[1], d[2], d[3] = channel(v, f.red), channel(v, f.green), channel(v, f.blue), 0xff
	}
}

// channel extracts the bits of mask from v as an 8-bit value.
func channel(v, mask uint32) byte {
	shift := bits.TrailingZeros32(mask)
	width := bits.OnesCount32(mask)
	c := (v & mask) >> shift
	switch {
	case width >= 8:
		return byte(c >> (width - 8))
	default: // replicate the high bits into the low ones
		c <<= 8 - width
		return byte(c | c>>width)
	}
}

// scale resizes src to w×h: each pixel of a smaller image is the mean of
// the source pixels it covers; a larger one repeats pixels.
func scale(src *image.RGBA, w, h int) *image.RGBA {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	spanX := spans(sw, w)
	spanY := spans(sh, h)
	for dy := range h {
		y0, y1 := spanY[dy][0], spanY[dy][1]
		drow := dst.Pix[dy*dst.Stride:]
		for dx := range w {
			x0, x1 := spanX[dx][0], spanX[dx][1]
			var r, g, b, n uint32
			for y := y0; y < y1; y++ {
				row := src.Pix[y*src.Stride+x0*4 : y*src.Stride+x1*4]
				for i := 0; i < len(row); i += 4 {
					r += uint32(row[i])
					g += uint32(row[i+1])
					b += uint32(row[i+2])
					n++
				}
			}
			d := drow[dx*4 : dx*4+4 : dx*4+4]
			d[0], d[1], d[2], d[3] = byte(r/n), byte(g/n), byte(b/n), 0xff
		}
	}
	return dst
}

// spans maps each of n destination pixels to the [from, to) range of the
// m source pixels it covers, at least one.
func spans(m, n int) [][2]int {
	out := make([][2]int, n)
	for i := range n {
		from := i * m / n
		to := max((i+1)*m/n, from+1)
		out[i] = [2]int{from, min(to, m)}
	}
	return out
}
