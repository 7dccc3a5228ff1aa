package results

import "time"

// ms is a shorthand for offsets in the tables of the tests.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func upAt(c uint32, at time.Duration) Transition   { return Transition{Client: c, At: at, Up: true} }
func downAt(c uint32, at time.Duration) Transition { return Transition{Client: c, At: at} }
