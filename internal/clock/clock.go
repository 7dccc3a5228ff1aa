// Package clock is the one time seam of the code that waits: the Clock
// interface a component takes to be stepped by a test, the wall clock
// behind it, and Sleep, the wait that a context cuts short. Code that
// waits with Sleep runs in virtual time inside a testing/synctest bubble.
package clock

import (
	"context"
	"time"
)

// Clock is a time source that a test can replace with a fake one that
// moves only when told to.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
var Real Clock = wall{}

type wall struct{}

func (wall) Now() time.Time                         { return time.Now() }
func (wall) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sleep waits for d or until ctx is done, whichever comes first. It
// returns nil when d has passed and ctx.Err() when ctx ended first; with
// d <= 0 it returns ctx.Err() at once. Its timer is released on return.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
