package storm

import (
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/report/live"
)

// startLive starts the run's live page, unless it has none or shares a
// bench's; it is closed when Run returns.
func (r *run) startLive() error {
	if r.cfg.Live == nil || r.cfg.liveSrv != nil {
		return nil
	}
	srv, err := live.Start(*r.cfg.Live)
	if err != nil {
		return err
	}
	r.cfg.liveSrv = srv
	r.defer_(func() { srv.Close() })
	r.ownLive = true
	return nil
}

// feedLive starts the live page's frames, from the start barrier on.
func (r *run) feedLive() {
	if r.cfg.liveSrv != nil {
		r.cfg.liveSrv.Feed(r.liveSnapshot)
	}
}

// finishLive sends the page its last frame, the results folder's, when
// the run owns the page (a bench sends its own at its end).
func (r *run) finishLive() {
	if r.cfg.liveSrv == nil || !r.ownLive {
		return
	}
	if err := r.cfg.liveSrv.Finish(r.cfg.Out, live.FinishWait); err != nil {
		r.logf("%v", err)
	}
}

// liveSnapshot is what the run knows now: the loadgens' merged timeline
// (over every host), the events applied and under way (the supervisor's,
// the sidecars': Sidecar.Events must be safe while Run goes), the server's
// capacity where it is known.
func (r *run) liveSnapshot() live.Snapshot {
	s := live.Snapshot{At: max(0, time.Since(r.at)), Label: "run", RunID: r.runID, Seed: r.fleet.Seed,
		Clients: r.cfg.Fleet.Clients, Timeline: r.co.Timeline(), SLO: r.cfg.SLO}
	if r.cfg.Out != "" {
		s.Label = filepath.Base(r.cfg.Out)
	}
	if r.totalRate > 0 {
		s.CapacityPer100ms = r.totalRate / 10
	}
	if r.sup != nil {
		s.Events, s.Underway = r.sup.SoFar()
	}
	// A drill's deploy command, marked once it starts: under way until
	// it ends (its end is its readiness).
	for _, sc := range r.cfg.Sidecars {
		for _, e := range sc.Events() {
			if e.End == 0 {
				s.Underway = append(s.Underway, e)
			} else {
				s.Events = append(s.Events, e)
			}
		}
	}
	return s
}

// benchLive starts the one live page of a bench's runs, when it has one;
// end sends the bench folder out's report as its last frame and closes it.
func benchLive(base *Config, out string) (end func(), err error) {
	if base.Live == nil {
		return func() {}, nil
	}
	srv, err := live.Start(*base.Live)
	if err != nil {
		return nil, err
	}
	base.liveSrv = srv
	return func() {
		if out != "" {
			srv.Finish(out, live.FinishWait)
		}
		srv.Close()
	}, nil
}
