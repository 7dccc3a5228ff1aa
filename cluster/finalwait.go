package cluster

import "time"

// FinalWaitLimit is how many FinalTimeouts an agent that keeps talking is
// waited for at most, for its final message or its recovery figures.
const FinalWaitLimit = 10

// finalWait is a wait for the agents' last messages after the run's end:
// their final one, then their recovery figures. An agent is given up once
// it has been silent for the timeout since the wait began, or at the
// latest FinalWaitLimit timeouts after it began. An agent that still
// talks is still at work: on a machine whose cores the last seconds of a
// million clients hold, a loadgen's reactors stop and its final message
// comes minutes after the run's end, its progress sent every second
// until then.
type finalWait struct {
	now     func() time.Time
	timeout time.Duration
	from    time.Time // when the wait began: the run's end, or the ask
}

// finalWait begins a wait at from.
func (c *Coordinator) finalWait(from time.Time) finalWait {
	return finalWait{now: c.now, timeout: orDefault(c.FinalTimeout, DefaultFinalTimeout), from: from}
}

// poll is how often the wait looks at the agents' silence.
func (w finalWait) poll() time.Duration {
	return max(min(w.timeout/4, time.Second), time.Millisecond)
}

// over reports whether the wait for a is over: a silent for the timeout
// since the wait began (silent is how long), or the wait at its limit.
func (w finalWait) over(a *Agent) (silent time.Duration, over bool) {
	now := w.now()
	if now.Before(w.from) {
		return 0, false
	}
	silent = now.Sub(w.from)
	if h := a.heardAt(); h.After(w.from) {
		silent = now.Sub(h)
	}
	return silent, silent >= w.timeout || now.Sub(w.from) >= FinalWaitLimit*w.timeout
}
