package clock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestSleep checks each way a Sleep ends, in virtual time.
func TestSleep(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      time.Duration
		cancel time.Duration // when ctx is cancelled; 0: never; <0: before the call
		want   error
		took   time.Duration
	}{
		{"d passes", 3 * time.Second, 0, nil, 3 * time.Second},
		{"ctx ends first", 3 * time.Second, time.Second, context.Canceled, time.Second},
		{"ctx already done", 3 * time.Second, -1, context.Canceled, 0},
		{"zero d", 0, 0, nil, 0},
		{"negative d", -time.Second, 0, nil, 0},
		{"zero d, ctx done", 0, -1, context.Canceled, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				switch {
				case c.cancel < 0:
					cancel()
				case c.cancel > 0:
					time.AfterFunc(c.cancel, cancel)
				}
				start := time.Now()
				err := Sleep(ctx, c.d)
				if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
					t.Errorf("Sleep = %v, want %v", err, c.want)
				}
				if took := time.Since(start); took != c.took {
					t.Errorf("Sleep took %v, want %v", took, c.took)
				}
			})
		})
	}
}

// TestRealAfter checks the wall clock's After in virtual time.
func TestRealAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := Real.Now()
		at := <-Real.After(2 * time.Second)
		if d := at.Sub(start); d != 2*time.Second {
			t.Errorf("After(2s) fired after %v", d)
		}
	})
}
