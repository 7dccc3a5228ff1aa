package backoff

import "time"

// Conn is what a client knows, when it decides its next retry, about the
// connection that ended or the attempt that failed. A library's rule may
// depend on it (how long the connection was up, when the last attempt
// began, the close code); the caller passes it in, so the policy never
// reads a clock.
type Conn struct {
	// Dropped is true when the retry follows the end of an established
	// connection, false when it follows a failed attempt.
	Dropped bool
	// Up is how long the ended connection was up (zero after a failed
	// attempt).
	Up time.Duration
	// SinceAttempt is the time since the last attempt began: for a drop,
	// since the connect of the connection that ended.
	SinceAttempt time.Duration
	// SinceDrop is the time since the client lost its connection: zero at
	// the drop itself.
	SinceDrop time.Duration
	// Close is the WebSocket close code of the end; zero when there was
	// none (an abrupt end, or a failed attempt).
	Close int
}

// Stop says why a client stops retrying.
type Stop uint8

// The reasons to stop.
const (
	// Continue: the client retries after Decision.Delay.
	Continue Stop = iota
	// Exhausted: the client used up its attempts (signalr after 4 retries,
	// graphql-ws after 5, nats after 10, attempts=N).
	Exhausted
	// Refused: the close code is one the library does not retry
	// (graphql-ws 4400, pusher 4000-4099, ...).
	Refused
)

// Decision is the policy's answer for one retry.
type Decision struct {
	// Delay is the wait before the retry; it may be zero (at once).
	Delay time.Duration
	// Stop is Continue, or why the client stops.
	Stop Stop
}

// retryDraws are the random retryDraws of one retry of one client.
type retryDraws struct {
	seed, client uint64
	attempt      int
	perProcess   int
	fixed        []float64 // tests: the draws u(0), u(1), ... and, last, process()
}

// u returns the retry's k-th draw: StreamJitter for the first, as for
// stampede's own kinds, StreamLoop for the further retryDraws of one wait.
func (d retryDraws) u(k int) float64 {
	if d.fixed != nil {
		return d.fixed[min(k, len(d.fixed)-1)]
	}
	if k == 0 {
		return U(d.seed, StreamJitter, d.client, uint64(d.attempt))
	}
	return U(d.seed, StreamLoop, d.client, uint64(d.attempt)<<16|uint64(k))
}

// process returns the draw shared by every client of the client's process
// (a JavaScript module-load draw).
func (d retryDraws) process() float64 {
	if d.fixed != nil {
		return d.fixed[len(d.fixed)-1]
	}
	n := max(d.perProcess, 1)
	return U(d.seed, StreamProcess, d.client/uint64(n), 0)
}

// Next decides retry number attempt (1-based) of one client of a seeded
// run, given what the client knows of its connection: a library preset's
// whole rule (giving up, close codes, waits counted from the last attempt);
// for stampede's own kinds, Retry and Delay. It is a pure function of its
// arguments.
func (p Policy) Next(seed, client uint64, attempt int, c Conn) Decision {
	attempt = max(attempt, 1)
	pr := lookup(p.Library.Name)
	if pr == nil {
		if !p.Retry(attempt) {
			return Decision{Stop: Exhausted}
		}
		return Decision{Delay: p.Delay(seed, client, attempt)}
	}
	return p.Library.next(retryDraws{seed: seed, client: client, attempt: attempt}, c)
}

// next is Next for a preset, with the retry's draws.
func (l Library) next(d retryDraws, c Conn) Decision {
	pr := lookup(l.Name)
	if lim := pr.limit(&l); lim < 0 || lim > 0 && d.attempt > lim {
		return Decision{Stop: Exhausted}
	}
	if pr.index(ClientsPerProcess) >= 0 {
		d.perProcess = int(l.value(ClientsPerProcess))
	}
	return pr.next(&l, d, c)
}

// Resets reports whether a connection that stayed up for up resets the
// attempt count. Most rules reset on every connect; reconnecting-websocket
// resets only after minUptime (5 s), so a connection that drops sooner
// keeps growing its delay.
func (p Policy) Resets(up time.Duration) bool {
	pr := lookup(p.Library.Name)
	if pr == nil || pr.resets == nil {
		return true
	}
	l := p.Library
	return pr.resets(&l, up)
}

// Limit returns the number of retries after which a client gives up; zero
// means never, a negative number before the first retry (graphql-ws with
// retryAttempts=0).
func (p Policy) Limit() int {
	pr := lookup(p.Library.Name)
	if pr == nil {
		return p.MaxAttempts
	}
	l := p.Library
	return pr.limit(&l)
}

// previewConn is the connection Delay and Delays assume for a preset: the
// first retry follows the abrupt drop of a long connection, each later one
// an attempt refused at once, its delay after the previous retries' waits.
func previewConn(attempt int, sinceDrop time.Duration) Conn {
	if attempt <= 1 {
		return Conn{Dropped: true, Up: time.Hour, SinceAttempt: time.Hour}
	}
	return Conn{SinceDrop: sinceDrop}
}

// libraryDelays returns a preset's delays before retries 1..n under
// previewConn, stopping where the client gives up.
func (p Policy) libraryDelays(seed, client uint64, n int) []time.Duration {
	out := make([]time.Duration, 0, min(n, 1024))
	var since time.Duration
	for a := 1; a <= n; a++ {
		dec := p.Next(seed, client, a, previewConn(a, since))
		if dec.Stop != Continue {
			break
		}
		out = append(out, dec.Delay)
		since += dec.Delay
	}
	return out
}
