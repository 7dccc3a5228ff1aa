package spec

import (
	"math"
	"time"
)

// Defaults of an HTTPFleet.
const (
	// DefaultHTTPDuration is how long an HTTP fleet schedules requests.
	DefaultHTTPDuration = 10 * time.Second
	// DefaultHTTPGrace is how long requests still running when the
	// schedule ends may finish before they are cancelled and counted
	// "unfinished".
	DefaultHTTPGrace = 10 * time.Second
	// MaxHTTPRate caps HTTPFleet.Rate, requests per second, as
	// Client.MaxAttemptRate's bound caps the WebSocket fleet's attempts:
	// far above what one machine sends, far below a rate whose schedule
	// no clock can space.
	MaxHTTPRate = 1e6
	// MaxHTTPInflight caps the fleet's requests in flight at once: a
	// send due while that many are still running waits for one to end
	// (its latency counts the wait, from its scheduled send).
	MaxHTTPInflight = 10000
)

// HTTPFleet is the spec of an HTTP fleet's load (docs/results.md "HTTP
// fleets"): how many clients, how many requests a second, for how long,
// and how long a request may take. What each request is (URL, method,
// headers, body) and how it is retried (httpretry.Config) are the
// fleet's run configuration beside it. Every zero field but Clients means
// its default.
type HTTPFleet struct {
	// Clients is the number of clients, each with its own keep-alive
	// connections (HTTP/1.1, or HTTP/2 when a TLS server offers it).
	// Required.
	Clients int `json:"clients"`
	// Rate is the fleet's offered load in logical requests per second,
	// shared evenly between the clients on a fixed schedule. Default: one
	// per client (Clients per second).
	Rate float64 `json:"rate"`
	// Duration is how long requests are scheduled for. Default 10 s.
	Duration time.Duration `json:"duration"`
	// Grace is how long requests still running at the end of Duration may
	// finish. Default 10 s.
	Grace time.Duration `json:"grace"`
	// Deadline, when positive, is how long each logical request may take
	// from its scheduled send: the caller's patience. A retry whose wait
	// would end past it is not made, and an attempt still running at the
	// deadline is cancelled. Zero means no deadline but the run's own end.
	Deadline time.Duration `json:"deadline"`
	// AutoIdempotencyKey gives each logical request its own
	// Idempotency-Key header, the same on all its attempts, so a POST or
	// PATCH may be retried and the server can deduplicate it.
	AutoIdempotencyKey bool `json:"auto_idempotency_key"`
}

// WithDefaults returns c with every zero field but Clients set to its
// default.
func (c HTTPFleet) WithDefaults() HTTPFleet {
	if c.Rate == 0 {
		c.Rate = float64(c.Clients)
	}
	if c.Duration == 0 {
		c.Duration = DefaultHTTPDuration
	}
	if c.Grace == 0 {
		c.Grace = DefaultHTTPGrace
	}
	return c
}

// Validate reports the first unusable field as a *FieldError
// ("HTTPFleet.Rate").
func (c HTTPFleet) Validate() error {
	bad := func(field, format string, a ...any) error { return Errorf("HTTPFleet."+field, format, a...) }
	switch {
	case c.Clients <= 0:
		return bad("Clients", "must be positive, got %d", c.Clients)
	case c.Rate < 0 || c.Rate != c.Rate || math.IsInf(c.Rate, 0):
		return bad("Rate", "must be a positive number of requests per second, got %v", c.Rate)
	case c.Rate > MaxHTTPRate:
		return bad("Rate", "at most %g requests per second, got %g", float64(MaxHTTPRate), c.Rate)
	case c.Duration < 0:
		return bad("Duration", "must be positive, got %s", c.Duration)
	case c.Grace < 0:
		return bad("Grace", "must not be negative, got %s", c.Grace)
	case c.Deadline < 0:
		return bad("Deadline", "must not be negative, got %s", c.Deadline)
	}
	return nil
}
