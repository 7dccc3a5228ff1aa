package loadgen

import (
	"errors"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// The spec's bounds hold what this package sends: the echo stamp fits the
// smallest payload, the largest body fits a protocol frame, and the
// shortest histogram interval is the results' tick. (A negative constant
// converted to uint does not compile.)
const (
	_ = uint(spec.MinMsgSize - stampSize)
	_ = uint(stampSize - spec.MinMsgSize)
	_ = uint(spec.MaxProtocolBody - (protocol.MaxFrameSize - 1024))
	_ = uint((protocol.MaxFrameSize - 1024) - spec.MaxProtocolBody)
	_ = uint(spec.MinHistInterval - results.Tick)
	_ = uint(results.Tick - spec.MinHistInterval)
)

// Config describes one fleet: its spec (every knob, its default and its
// check: package spec) and what places it among a run's processes. The
// zero value of every field but URL and Clients means its default. A
// Config serialises to JSON (hooks excluded) so a run's results can record
// it and a plan carries it whole to an agent.
type Config struct {
	spec.Client
	// FirstID is the ID of the fleet's first client; IDs are FirstID ..
	// FirstID+Clients-1. IDs key every random draw, so a fleet split over
	// processes draws what one process would.
	FirstID uint32 `json:"first_id"`
	// Start is the run's common start instant (wall clock); timeline
	// offsets and ramp slots count from it. Zero means when Run is called.
	Start time.Time `json:"start"`

	// OnRetry, if set, is called each time a client schedules a retry, on a
	// reactor goroutine: it must be fast and safe for concurrent use. For
	// tests and tracing.
	OnRetry func(Retry) `json:"-"`
}

// Retry describes one scheduled retry (Config.OnRetry).
type Retry struct {
	// Client is the client's ID.
	Client uint32
	// Attempt is the retry's number since the last successful connect
	// (1-based), the argument given to Policy.Delay.
	Attempt int
	// Class is why the previous attempt failed or the connection ended.
	Class connerr.Class
	// Hint is the server's Retry-After, 0 when there was none.
	Hint time.Duration
	// Delay is the wait chosen.
	Delay time.Duration
	// At is when the failure was detected, from the run's start.
	At time.Duration
}

// Validate reports the first field that makes the Config unusable as a
// *spec.FieldError. It does not check the host's limits; New does.
func (c Config) Validate() error {
	if err := c.Client.Validate(); err != nil {
		return err
	}
	if uint64(c.FirstID)+uint64(c.Clients) > 1<<32 {
		return spec.Errorf("Client.Clients", "IDs %d+%d overflow 32 bits", c.FirstID, c.Clients)
	}
	return nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Client = c.Client.WithDefaults()
	return c
}

// Redacted returns the Config with its secrets hidden, for anything that
// is written or printed (summary.json's config, logs): see
// spec.Client.Redacted. The fleet itself runs on the original; a plan for
// an agent carries the original over its stdin, never a command line.
func (c Config) Redacted() Config {
	c.Client = c.Client.Redacted()
	return c
}

// errRunTwice is returned by a second call of Fleet.Run.
var errRunTwice = errors.New("loadgen: a Fleet runs once")
