package sim

// DefaultLoadgenReactors is how many reactors a simulated loadgen process
// runs when Client.Reactors is not given: the loadgen's default,
// min(GOMAXPROCS, 4), on this project's two-core machine, or on Cores
// cores when they are modelled. The simulator does not take it from the
// machine it runs on, so that a config gives the same result anywhere.
const DefaultLoadgenReactors = 2

// reactors are the loadgen's epoll reactors (loadgen/reactor.go), when
// Config.ReactorCost is given: each loadgen process deals its clients to
// Client.Reactors goroutines, and a reactor does its clients' work one
// piece at a time. A connect that completes is seen when its reactor has
// done the work before it, and only then is the upgrade request written:
// the target defers accept (TCP_DEFER_ACCEPT), so the connection reaches
// the accept queue with that request, not with the final ACK. An idle
// reactor answers in one attempt's cost; a burst of connects completing
// together writes the k-th request about k costs later, and the accept
// queue may fill in between: a request that finds it full stalls, and
// its client times out when no retransmit gets in. Every attempt costs
// its reactor ReactorCost once: at its connect's completion when it
// connected, at its failure when it did not (a refused connect's close
// and backoff).
//
// The queue is the reactors' time only: with Cores the attempt's CPU is
// charged to the machine's pool where it always was (loadgenRun), and
// not again here.
type reactors struct {
	cost int64   // ns of a reactor per attempt
	free []int64 // per reactor (process by process), when it has done the work queued so far
}

// newReactors returns the fleet's reactors, or nil without a
// ReactorCost (the request one RTT after the SYN).
func newReactors(cfg Config) *reactors {
	if cfg.ReactorCost <= 0 {
		return nil
	}
	procs := max(1, (cfg.Clients+loadgenPerProcess-1)/loadgenPerProcess)
	return &reactors{cost: int64(cfg.ReactorCost), free: make([]int64, procs*max(1, cfg.Client.Reactors))}
}

// job queues an attempt's work of client id on its reactor at now and
// returns when the reactor has done it.
func (r *reactors) job(id uint32, now int64) int64 {
	i := int(id) % len(r.free)
	done := max(now, r.free[i]) + r.cost
	r.free[i] = done
	return done
}

// reaction returns when client id's reactor, its connect completing at
// now, writes the upgrade request, and whether it waited for the reactor
// (the connection reaches the accept queue with the request, so not
// before). Without the queue, or on a balancer's leg, now and false.
func (s *sim) reaction(id uint32, now int64) (int64, bool) {
	if s.react == nil || s.clients[id].flags&flFwd != 0 {
		return now, false
	}
	return s.react.job(id, now), true
}

// reacted charges client id's reactor with an attempt that failed at now
// before its connect completed.
func (s *sim) reacted(id uint32, now int64) {
	if s.react != nil {
		s.react.job(id, now)
	}
}
