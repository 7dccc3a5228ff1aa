package httpfleet

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"time"

	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/report/live"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/spec"
)

// Config describes an HTTP fleet run (docs/results.md "HTTP fleets"): its
// load (the spec: clients, rate, duration, grace, deadline), the request
// every client sends and how it is retried. The zero value of each
// optional field means its default.
type Config struct {
	spec.HTTPFleet
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
	// SLO are the run's gates: Summarize evaluates them, and the live
	// page shows their state so far.
	SLO []slo.SLO `json:"-"`
	// Live, if set, serves the run's live page (report/live) while
	// RunTo goes: the fleet's figures so far, becoming the results
	// folder's report.html at the end. Its URL, token included, is told
	// to Live.Announce once. Never written to the results.
	Live *live.Config `json:"-"`
	// MaxInflight caps the requests in flight at once, within
	// spec.MaxHTTPInflight; zero means spec.MaxHTTPInflight.
	MaxInflight int `json:"-"`
}

// withDefaults sets the spec's defaults, and fills Now and Sleep, and the
// retry client's, from the real clock where unset.
func (c Config) withDefaults() Config {
	c.HTTPFleet = c.HTTPFleet.WithDefaults()
	if c.MaxInflight <= 0 || c.MaxInflight > spec.MaxHTTPInflight {
		c.MaxInflight = spec.MaxHTTPInflight
	}
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

// Validate reports the first unusable field as a *spec.FieldError:
// "HTTP.URL", the spec's ("HTTPFleet.Rate"), "HTTP.Retry".
func (c Config) Validate() error {
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return spec.Errorf("HTTP.URL", "%q is not an absolute http or https URL", redact.URLWith(c.URL, c.SecretHeaders))
	}
	if _, err := spec.CheckURL("HTTP.URL", c.URL, "http", "https"); err != nil {
		return err
	}
	if err := spec.CheckSecretHeaders("HTTP.SecretHeaders", "HTTP.Header", c.SecretHeaders); err != nil {
		return err
	}
	if err := c.HTTPFleet.Validate(); err != nil {
		return err
	}
	if err := c.Retry.Validate(); err != nil {
		return spec.Wrap("HTTP.Retry", err)
	}
	if c.Live != nil {
		return c.Live.Validate()
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
