package target

import "time"

// Clock is the time source of everything in the server that waits: accept
// pacing, stalls, Hold, reject windows and Retry-After bookkeeping, and the
// graceful shutdown's wait for close replies. Tests inject a fake one to step
// time instead of sleeping. Socket deadlines (handshake, frame, write) are
// set on the kernel's real clock and do not use it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
