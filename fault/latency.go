package fault

import (
	"fmt"
	"time"
)

// The latency fault (Set.Latency, Set.Jitter) delays data in each
// direction by Latency ± Jitter, drawn per chunk of data. Jitter needs a
// latency to vary and is at most that latency: a delay is never negative.

// checkLatency says what is wrong with a latency and its jitter, or nil.
func checkLatency(latency, jitter time.Duration) error {
	switch {
	case latency < 0:
		return &FieldError{"Latency", fmt.Sprintf("must not be negative, got %v", latency)}
	case jitter < 0:
		return &FieldError{"Jitter", fmt.Sprintf("must not be negative, got %v", jitter)}
	case jitter > 0 && latency == 0:
		return &FieldError{"Jitter", "varies a latency: needs Latency too"}
	case jitter > latency:
		return &FieldError{"Jitter", fmt.Sprintf("must be at most Latency (%v), got %v", latency, jitter)}
	}
	return nil
}
