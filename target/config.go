package target

import (
	"log/slog"

	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/spec"
)

// Config configures a Server: its spec (every knob, its default and its
// check: package spec) and the hooks and secrets of one process. The zero
// value is a plain ws:// echo server on 127.0.0.1 with a backlog of 128
// and no limits. It serialises to JSON (hooks excepted) so a run can
// record the target it used and a plan carries it whole to a child.
type Config struct {
	spec.Server
	// ControlToken is the token of the process's control API (docs/cli.md,
	// "Control API"); empty: the process draws one at start. A Group sets
	// it for its processes in the plan on their stdin, never on a command
	// line, where any user of the machine could read it.
	ControlToken string `json:"control_token,omitempty"`
	// Seed seeds the server's random draws: a shed request's Retry-After
	// (Shed) and the order and return hints of a spread graceful shutdown
	// (ShutdownWith). 0: seeded from the time.
	Seed uint64 `json:"seed,omitempty"`

	// Handler handles the messages of every connection. Default Echo.
	Handler Handler `json:"-"`
	// Logger receives the server's rare events (start, shutdown, accept
	// errors). Default: discard.
	Logger *slog.Logger `json:"-"`
	// Clock paces accepts and times stalls, holds and reject windows.
	// Default: the wall clock.
	Clock clock.Clock `json:"-"`
}

// Rejection is a window in which every upgrade is answered Status with a
// Retry-After of RetryAfter (spec.Rejection).
type Rejection = spec.Rejection

// Validate reports the first invalid field as a *spec.FieldError.
func (c Config) Validate() error { return c.Server.Validate() }

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Server = c.Server.WithDefaults()
	if c.Handler == nil {
		c.Handler = Echo{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}
