package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/storm"
)

// Result is what a drill produced.
type Result struct {
	// Run is the storm run's result: summary (with the "deploy" event and
	// the checks), merged report, sizing.
	*storm.Result
	// Deploy is the deploy command; nil with WaitForOutage.
	Deploy *Deploy
}

// Pass reports whether every SLO and check held and the run completed.
func (r *Result) Pass() bool {
	s := r.Summary
	return s != nil && s.Pass && s.Complete && !s.Interrupted
}

// Run validates cfg (no socket opens before the target is allowed), prints
// the banner to cfg.Log, runs the fleet with the deploy command (or the
// outage watch) and cfg.Sidecars beside it, and writes the results folder
// (private) and the JUnit file. Its error is storm.Run's (ErrInterrupted,
// ErrIncomplete with the folder written) or a setup error with a nil
// Result; a failing gate is no error: see Result.Pass and the summary.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	run := cfg.Run
	res := &Result{}
	secrets := redact.Values(run.Fleet.Header, run.Fleet.SecretHeaders, run.Fleet.URL)
	if cfg.RestartCmd != "" {
		res.Deploy = &Deploy{Command: cfg.RestartCmd, At: cfg.At, Timeout: cfg.CommandTimeout, Log: cfg.Log, Secrets: secrets}
		run.Sidecars = append([]storm.Sidecar{res.Deploy}, cfg.Sidecars...)
	} else {
		run.Sidecars = append([]storm.Sidecar{OutageWatch{}}, cfg.Sidecars...)
	}
	Banner(cfg.Log, &cfg)
	began := time.Now()
	sr, err := storm.RunValid(ctx, run) // cfg.Validate checked it
	if sr == nil {
		return nil, err
	}
	res.Result = sr
	if cfg.JUnit != "" {
		f := run.Fleet
		doc := JUnitOf(sr.Summary, redact.URLWith(f.URL, f.SecretHeaders), began).
			Redacted(redact.Policy{Headers: f.SecretHeaders, Values: secrets})
		if jerr := WriteJUnit(cfg.JUnit, doc); jerr != nil && err == nil {
			err = jerr
		}
	}
	if cfg.Log != nil && run.Fleet.TLSInsecure {
		fmt.Fprintln(cfg.Log, InsecureWarning) // again, below the figures' progress
	}
	return res, err
}
