package httpretry

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// TestValidate names the faulty field of each bad Config.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{name: "zero value", cfg: Config{}},
		{name: "bad policy", cfg: Config{Policy: &backoff.Policy{Jitter: 2}}, want: "httpretry: policy: " + backoff.Policy{Jitter: 2}.Validate().Error()},
		{name: "2xx status", cfg: Config{StatusCodes: []int{200}}, want: "httpretry: status code 200 cannot be retried: only 400-599 are failures"},
		{name: "negative cap", cfg: Config{MaxRetryAfter: -time.Second}, want: "httpretry: max retry-after must not be negative, got -1s"},
		{name: "NaN spread", cfg: Config{RetryAfterSpread: nan()}, want: "httpretry: retry-after spread must be a finite number, got NaN"},
		{name: "negative timeout", cfg: Config{AttemptTimeout: -1}, want: "httpretry: attempt timeout must not be negative, got -1ns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if got := errString(err); got != tc.want {
				t.Fatalf("Validate() = %q; want %q", got, tc.want)
			}
			if _, err := New(tc.cfg); errString(err) != tc.want {
				t.Fatalf("New() = %v; want %q", err, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nan() float64 { z := 0.0; return z / z }
