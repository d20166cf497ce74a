package sandboxd_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

// The desktop's latencies through a real daemon over loopback, measured
// with the SDK; each reports its median and 99th percentile.
//
//	go test -run - -bench Desktop -benchtime 200x ./internal/sandboxd/

// BenchmarkDesktopScreenshot is a full 1280×800 PNG of a screen with
// two terminals full of text: X GetImage, convert, encode, transfer.
func BenchmarkDesktopScreenshot(b *testing.B) {
	benchScreenshot(b, client.ScreenshotOptions{})
}

// BenchmarkDesktopScreenshotHalf is the same screen at scale 0.5.
func BenchmarkDesktopScreenshotHalf(b *testing.B) {
	benchScreenshot(b, client.ScreenshotOptions{Scale: 0.5})
}

// BenchmarkDesktopMouseMove is one action's round trip: XTest motion,
// then the pointer query that returns the cursor.
func BenchmarkDesktopMouseMove(b *testing.B) {
	c := benchDesktop(b)
	ctx := context.Background()
	i := 0
	benchMeasure(b, func() error {
		i++
		_, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionMouseMove, Coordinate: []int{i % 1280, i % 800}})
		return err
	})
}

// BenchmarkDesktopKey is a key press through xdotool (a process per
// action).
func BenchmarkDesktopKey(b *testing.B) {
	c := benchDesktop(b, "xdotool")
	ctx := context.Background()
	benchMeasure(b, func() error {
		_, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionKey, Key: "shift"})
		return err
	})
}

func benchScreenshot(b *testing.B, opts client.ScreenshotOptions) {
	c := benchDesktop(b, "xterm")
	ctx := context.Background()
	st, err := c.DesktopStatus(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i, geometry := range []string{"100x40+0+0", "90x50+500+150"} {
		_, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "xterm", Env: map[string]string{"DISPLAY": st.Display},
			Args: []string{"-geometry", geometry, "-e", "ls -l /usr/bin /usr/lib; sleep 600"}, Tag: fmt.Sprint("bench-xterm-", i)})
		if err != nil {
			b.Fatal(err)
		}
	}
	// Wait until both windows are up and have drawn.
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := c.DesktopWindows(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(list) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("windows: %+v; want two xterms", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // their text
	var bytes int
	benchMeasure(b, func() error {
		png, err := c.DesktopScreenshot(ctx, opts)
		bytes = len(png)
		return err
	})
	b.ReportMetric(float64(bytes), "png-bytes")
}

// benchDesktop starts a daemon with a running 1280×800 desktop.
func benchDesktop(b *testing.B, programs ...string) *client.Client {
	_, c := desktopDaemon(b, programs...)
	if _, err := c.StartDesktop(context.Background(), sandboxapi.DesktopStartRequest{Width: 1280, Height: 800}); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchMeasure times each call of op and reports the median and p99.
func benchMeasure(b *testing.B, op func() error) {
	for range 5 { // warm the connection and the encoder's buffers
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1e3, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1e3, "p99-ms")
}
