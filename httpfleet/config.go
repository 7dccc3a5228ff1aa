package httpfleet

import (
	"context"
	"crypto/tls"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// DefaultGrace is how long requests still running when the schedule ends
// may finish before they are cancelled and counted "unfinished".
const DefaultGrace = 10 * time.Second

// Config describes an HTTP fleet run (docs/results.md "HTTP fleets"). The
// zero value of each optional field means its default.
type Config struct {
	// URL is the absolute http or https URL every request goes to.
	URL string `json:"url"`
	// Method is the request method; "" means GET.
	Method string `json:"method"`
	// Body is sent with every request; nil sends none.
	Body []byte `json:"-"`
	// Header is added to every request.
	Header http.Header `json:"header,omitempty"`
	// SecretHeaders are more header (and query parameter) names whose
	// values are secret besides redact.DefaultHeaders and names holding
	// one of redact.Words: written <redacted> in the results.
	SecretHeaders []string `json:"secret_headers,omitempty"`
	// Host, when set, replaces the Host header.
	Host string `json:"host,omitempty"`
	// Clients is the number of clients, each with its own keep-alive
	// connections (HTTP/1.1, or HTTP/2 when a TLS server offers it).
	Clients int `json:"clients"`
	// Rate is the fleet's offered load in logical requests per second,
	// shared evenly between the clients on a fixed schedule.
	Rate float64 `json:"rate"`
	// Duration is how long requests are scheduled for.
	Duration time.Duration `json:"duration"`
	// Grace is how long requests still running at the end of Duration may
	// finish; zero means DefaultGrace.
	Grace time.Duration `json:"grace"`
	// Deadline, when positive, is how long each logical request may take
	// from its scheduled send: the caller's patience. A retry whose wait
	// would end past it is not made (the request is given up at once,
	// httpretry.ErrPastDeadline), and an attempt still running at the
	// deadline is cancelled. Both count as "deadline" outcomes. Zero means
	// no deadline but the run's own end.
	Deadline time.Duration `json:"deadline"`
	// AutoIdempotencyKey gives each logical request its own
	// Idempotency-Key header, the same on all its attempts, so a POST or
	// PATCH may be retried and the server can deduplicate it.
	AutoIdempotencyKey bool `json:"auto_idempotency_key"`
	// Retry is the retry configuration of every request. Its Seed is the
	// run's seed; Client, Base and OnAttempt are set per request.
	Retry httpretry.Config `json:"retry"`
	// TLS configures https connections; nil means the defaults.
	TLS *tls.Config `json:"-"`
	// Settings, when not nil, is what summary.json records as the run's
	// config instead of this struct: the command line renders its flags
	// in the user's spelling, secrets redacted.
	Settings any `json:"-"`
	// Now reads the clock for the schedule, the latencies and the
	// timeline, and Sleep waits for the next scheduled send (returning
	// ctx.Err() when ctx ends first); nil means the real clock. Retry.Now
	// and Retry.Sleep default to them.
	Now   func() time.Time                                 `json:"-"`
	Sleep func(ctx context.Context, d time.Duration) error `json:"-"`
}

// withClock fills Now and Sleep, and the retry client's, from the real
// clock where unset.
func (c Config) withClock() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = clock.Sleep
	}
	if c.Retry.Now == nil {
		c.Retry.Now = c.Now
	}
	if c.Retry.Sleep == nil {
		c.Retry.Sleep = c.Sleep
	}
	return c
}

// Validate reports the first unusable field as a *spec.FieldError
// ("HTTP.Rate").
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return spec.Errorf("HTTP.URL", "%q is not an absolute http or https URL", redact.URLWith(c.URL, c.SecretHeaders))
	}
	if _, err := spec.CheckURL("HTTP.URL", c.URL, "http", "https"); err != nil {
		return err
	}
	switch {
	case c.Clients <= 0:
		return spec.Errorf("HTTP.Clients", "must be positive, got %d", c.Clients)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return spec.Errorf("HTTP.Rate", "must be a positive number of requests per second, got %v", c.Rate)
	case c.Duration <= 0:
		return spec.Errorf("HTTP.Duration", "must be positive, got %s", c.Duration)
	case c.Grace < 0:
		return spec.Errorf("HTTP.Grace", "must not be negative, got %s", c.Grace)
	case c.Deadline < 0:
		return spec.Errorf("HTTP.Deadline", "must not be negative, got %s", c.Deadline)
	}
	if err := c.Retry.Validate(); err != nil {
		return spec.Wrap("HTTP.Retry", err)
	}
	return nil
}

// method returns the request method, GET when empty.
func (c Config) method() string {
	if c.Method == "" {
		return http.MethodGet
	}
	return c.Method
}
