package storm

import (
	"context"
	"errors"
	"time"

	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/tlsconf"
)

// driven is what the drive phase collected.
type driven struct {
	report      *results.Report // every loadgen's pieces, merged
	lost        []error         // loadgens whose final message never came
	interrupted bool            // ctx ended before the run did
	sideEvents  []results.Event // the sidecars' (a drill's deploy)
	chaosErr    error           // the schedule's, if it failed
	tls         *tlsconf.Stats  // a wss:// target's handshakes; nil for ws://
}

// drive runs the fleet: the samplers start, the start barrier goes out,
// the chaos schedule and the sidecars run on the run's time axis, and the
// loadgens' results are collected until their final messages (the run's
// end, an interrupt, a lost agent with --on-agent-loss fail). Then
// everything that ran beside the fleet is stopped, and the samplers take
// their last figures.
func (r *run) drive(ctx context.Context) error {
	cfg := &r.cfg
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	r.defer_(stopSampling)
	hapDone := r.startSamplers(sampleCtx)
	r.mx.setResources(r.sampler)
	if r.tgt != nil {
		r.sup = &supervisor.Supervisor{Schedule: cfg.Schedule, Target: r.tgt, Log: r.logf}
		if r.proxy != nil {
			r.sup.Proxy = r.proxy // never a typed nil: the supervisor checks Proxy == nil
		}
		r.progress.Event = r.sup.Current
		r.mx.setChaos(r.sup)
	}
	at, err := r.co.Start(cfg.Duration)
	if err != nil {
		return err
	}
	r.at = at
	r.watch.started(at)
	r.progress.Start(at)
	r.feedLive()
	sideCtx, stopSide := context.WithDeadline(ctx, at.Add(cfg.Duration))
	r.defer_(stopSide)
	side := startSidecars(sideCtx, cfg.Sidecars, at, r.progress.Total)
	supCtx, stopChaos := context.WithCancel(ctx)
	r.defer_(stopChaos)
	supDone := make(chan error, 1)
	if r.sup != nil {
		go func() { supDone <- r.sup.Run(supCtx, at, cfg.Duration) }()
	} else {
		supDone <- nil
	}
	d := &r.drove
	d.report, d.lost = r.co.Collect(ctx, at, cfg.Duration)
	d.interrupted = ctx.Err() != nil
	d.sideEvents = side.stop()
	r.progress.Stop()
	stopChaos()
	d.chaosErr = <-supDone
	if errors.Is(d.chaosErr, context.Canceled) {
		d.chaosErr = nil
	}
	for _, err := range d.lost {
		r.logf("loadgen: %v", err)
	}
	d.tls = r.targetTLS()
	r.sampler.Sample()
	r.kernel.Stop() // the last row of kernel.csv, and the summary's kernel figures
	stopSampling()
	<-r.samplerDone // its last sample lands before the summary and the final export read it
	<-hapDone
	if r.hap != nil {
		r.hap.Sample(context.Background()) // the run's last figures
	}
	return nil
}

// startSamplers starts sampling resources, kernel counters and the load
// balancer once a second until ctx ends; the returned channel closes when
// the load balancer's sampler has stopped.
func (r *run) startSamplers(ctx context.Context) (hapDone <-chan struct{}) {
	co := r.co
	r.sampler = hoststat.NewSampler(time.Second, func() map[string][]int32 { return rolePIDs(co) })
	if r.tgt != nil {
		r.sampler.CountTCP(urlPort(r.tgt.URL()), urlPort(r.fleet.URL)) // resources.csv tcp_* columns
	} else {
		r.sampler.CountTCP(urlPort(r.fleet.URL), urlPort(r.fleet.URL))
	}
	samplerDone := make(chan struct{})
	r.samplerDone = samplerDone
	go func() { r.sampler.Run(ctx); close(samplerDone) }()
	r.kernel = hoststat.NewKernelSampler(time.Second) // kernel.csv
	go r.kernel.Run(ctx)
	done := make(chan struct{})
	if r.hap != nil {
		go func() { r.hap.Run(ctx); close(done) }() // haproxy.csv
	} else {
		close(done)
	}
	return done
}

// targetTLS reads the TLS handshakes of the target stampede runs, once
// the fleet is done (nil against --url, for ws://, or when the target did
// not answer within statsTimeout).
func (r *run) targetTLS() *tlsconf.Stats {
	if r.tgt == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsReadTimeout)
	defer cancel()
	st, err := r.tgt.TLSHandshakes(ctx)
	if err != nil {
		r.logf("target: TLS handshakes not counted: %v", err)
		return nil
	}
	return st
}

// tlsReadTimeout bounds the reading of the target's TLS handshakes.
const tlsReadTimeout = 5 * time.Second
