package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
)

// TestRunInterrupted: a simulation whose context ends stops within a
// few thousand entries, even inside one instant of many events, and
// returns the figures of the virtual time it reached, marked interrupted,
// without the events it never reached.
func TestRunInterrupted(t *testing.T) {
	sched, err := chaos.Parse("every 2s restart abrupt down=500ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Duration: 600 * time.Second, Schedule: sched}
	cfg.Clients = 20000
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	began := time.Now()
	res, err := Run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) || res == nil || !res.Interrupted {
		t.Fatalf("Run = %v, %v; want an interrupted result", res, err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("Run took %s after its context was cancelled at 200ms", took)
	}
	if n := len(res.Events); n >= 300 || len(res.Partials) != n {
		t.Errorf("%d events, %d partials: want only those reached, of 300 planned", n, len(res.Partials))
	}
	if sum := Summarize(res, nil); !sum.Interrupted {
		t.Error("the summary is not marked interrupted")
	}
}
