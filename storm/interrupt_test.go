package storm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/storm"
)

// cancelOn is a log that cancels a run after d once a line with want was
// written: an interrupt at a chosen point of the run.
type cancelOn struct {
	lockedBuffer
	want   string
	d      time.Duration
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.want) {
		c.once.Do(func() { time.AfterFunc(c.d, c.cancel) })
	}
	return c.lockedBuffer.Write(p)
}

// A run interrupted while a restart is under way keeps the event: it is
// in summary.json with what was measured until the interrupt (the clients
// it took down, none back, no R figure), and in timeline.csv's event
// column.
func TestInterruptKeepsEvent(t *testing.T) {
	cfg := stormConfig(t, "at 2s restart abrupt down=5s")
	cfg.Fleet.Clients = 100
	cfg.Duration = 15 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	logs := &cancelOn{want: "chaos: at 2s restart abrupt down=5s at ", d: 1500 * time.Millisecond, cancel: cancel}
	cfg.Log = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storm log:\n%s", logs.String())
		}
	})
	res, err := storm.Run(ctx, cfg)
	if !errors.Is(err, storm.ErrInterrupted) {
		t.Fatalf("storm.Run: %v, want ErrInterrupted", err)
	}
	sum := res.Summary
	if !sum.Interrupted || len(sum.Events) != 1 || len(sum.Recovery) != 1 {
		t.Fatalf("interrupted %v, events %+v, recovery %+v; want the restart and its recovery", sum.Interrupted, sum.Events, sum.Recovery)
	}
	ev, rec := sum.Events[0], sum.Recovery[0]
	if ev.Kind != "restart" || ev.ReadyS != nil || ev.Disconnects["closed_1006"] == 0 {
		t.Errorf("event %+v; want the restart, never ready, with its 1006 disconnects", ev)
	}
	if rec.ConnectedBefore != 100 || rec.Disconnected == 0 || rec.Recovered >= rec.ConnectedBefore || rec.R50S != nil || rec.R100S != nil {
		t.Errorf("recovery %+v; want 100 before, some down, not all back, R figures null", rec)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, folder.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "restart") {
		t.Errorf("timeline.csv names no event:\n%.400s", b)
	}
}
