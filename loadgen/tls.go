package loadgen

import (
	"context"
	"errors"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// tlsFleet runs wss:// clients, one goroutine each.
type tlsFleet struct {
	f   *Fleet
	rec *recorder
}

func newTLSFleet(f *Fleet) *tlsFleet {
	return &tlsFleet{f: f, rec: newRecorder(f.cfg.Start, f.cfg.Clients)}
}

func (t *tlsFleet) run(ctx context.Context, epoch time.Time) (*results.Report, error) {
	return nil, errors.New("loadgen: wss:// not implemented yet")
}
