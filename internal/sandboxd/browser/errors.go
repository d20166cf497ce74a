package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/internal/errdefs"
)

// fail turns the error of an operation on t into an errdefs class with a
// client-safe message. ctx is the caller's context, octx the operation's
// (which also ends with the tab and after the operation's timeout); what
// names the operation ("navigation").
func (t *Tab) fail(ctx, octx context.Context, err error, what string) error {
	var (
		le *chromedp.LoadError
		ce *cdproto.Error
		ee *errdefs.Error
	)
	switch {
	case errors.As(err, &ee):
		return err // classed already
	case ctx.Err() != nil:
		return fmt.Errorf("browser: %s: %w", what, ctx.Err()) // the client went away
	case t.in.root.Err() != nil:
		return errdefs.Wrap(errdefs.ErrUnavailable, err, fmt.Sprintf("the browser stopped during %s", what))
	case t.ctx.Err() != nil, errors.Is(err, chromedp.ErrTargetDetached):
		return errdefs.Wrap(errdefs.ErrNotFound, err, fmt.Sprintf("tab %q was closed during %s", t.id, what))
	case errors.Is(octx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return errdefs.Wrap(errdefs.ErrTimeout, err, what+" timed out")
	case errors.As(err, &le):
		return errdefs.Wrap(errdefs.ErrBadGateway, err, fmt.Sprintf("%s failed: %s", what, le.ErrorText))
	case errors.As(err, &ce):
		return classifyCDP(err, ce.Message, what)
	}
	return fmt.Errorf("browser: %s: %w", what, err)
}

// classifyCDP classes an error the browser answered a command with.
func classifyCDP(err error, msg, what string) error {
	class := errdefs.ErrBadGateway
	switch {
	case strings.Contains(msg, "No node with given id"), strings.Contains(msg, "No node found"), strings.Contains(msg, "Could not find node"):
		return errdefs.Wrap(errdefs.ErrNotFound, err, "no such node in the page (node ids from the accessibility tree last until the page changes)")
	case strings.Contains(msg, "Could not compute content quads"), strings.Contains(msg, "Could not compute box model"):
		return errdefs.Wrap(errdefs.ErrUnprocessable, err, "the element has no visible box to click")
	case strings.Contains(msg, "not focusable"), strings.Contains(msg, "is not an Element"),
		strings.Contains(msg, "detached from document"):
		class = errdefs.ErrUnprocessable
	case strings.Contains(msg, "invalid URL"), strings.Contains(msg, "Invalid parameters"):
		class = errdefs.ErrInvalid
	}
	return errdefs.Wrap(class, err, fmt.Sprintf("%s: the browser answered: %s", what, msg))
}

// quote formats a user-given string for a message.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}
