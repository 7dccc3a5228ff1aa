package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
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
// ErrIncomplete with the folder written), a *NotConnectedError when the
// fleet was not connected when the deploy was due (the run stopped there,
// no deploy ran, the folder written), or a setup error with a nil Result;
// a failing gate is no error: see Result.Pass and the summary.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	run := cfg.Run
	run.Kind, run.Deploy = spec.KindDrill, &spec.Deploy{At: cfg.At, WaitForOutage: cfg.WaitForOutage}
	res := &Result{}
	// Every secret the run knows, the deploy command's own too, is
	// scrubbed from its output, its line and the files.
	run.SecretValues = append(run.SecretValues, redact.CommandValues(cfg.RestartCmd, run.Fleet.SecretHeaders)...)
	secrets := run.Secrets().Values
	runCtx, stop := context.WithCancelCause(ctx) // the gate ends the run early
	defer stop(nil)
	gate := fleetGate{clients: run.Fleet.Clients, min: cfg.MinConnected, byHand: cfg.WaitForOutage, stop: stop}
	if cfg.RestartCmd != "" {
		res.Deploy = &Deploy{Command: cfg.RestartCmd, At: cfg.At, Timeout: cfg.CommandTimeout, Log: cfg.Log, Secrets: secrets,
			Interrupted: ctx.Done(), Abort: cfg.Abort, gate: gate}
		run.Sidecars = append([]storm.Sidecar{res.Deploy}, cfg.Sidecars...)
	} else {
		w := &OutageWatch{gate: gate, deadline: rampEnd(run.Fleet.Clients, run.Fleet.Ramp) + HandDeployGrace}
		run.Sidecars = append([]storm.Sidecar{w}, cfg.Sidecars...)
	}
	Banner(cfg.Log, &cfg)
	began := time.Now()
	sr, err := storm.RunValid(runCtx, run) // cfg.Validate checked it
	var notConnected *NotConnectedError
	if errors.As(context.Cause(runCtx), &notConnected) && ctx.Err() == nil {
		err = notConnected // the gate stopped the run, not the user
	}
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

// rampEnd is when the last first connect of a fleet of clients starts at
// ramp per second (zero: all at once).
func rampEnd(clients int, ramp float64) time.Duration {
	if ramp <= 0 {
		return 0
	}
	return time.Duration(float64(clients) / ramp * float64(time.Second))
}
