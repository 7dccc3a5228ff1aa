package target

import "sync/atomic"

// Stats are a target's counters since start. Every field adds up across
// the processes of a Group.
type Stats struct {
	// Procs is the number of server processes counted (1 for a Server).
	Procs int `json:"procs"`
	// Conns is the number of WebSocket connections open now.
	Conns int64 `json:"conns"`
	// Accepted counts TCP connections taken from the accept queue.
	Accepted uint64 `json:"accepted"`
	// UpgradesOK counts upgrades answered 101.
	UpgradesOK uint64 `json:"upgrades_ok"`
	// UpgradesRejected counts upgrades answered with an error status on
	// purpose: MaxConns (503) or a Reject window.
	UpgradesRejected uint64 `json:"upgrades_rejected"`
	// UpgradesFailed counts accepted connections that never upgraded: TLS
	// failure, handshake timeout, malformed request, client gone.
	UpgradesFailed uint64 `json:"upgrades_failed"`
	// EarlyRetries counts upgrade attempts by a client that came back
	// sooner than the Retry-After it had been given.
	EarlyRetries uint64 `json:"early_retries"`
	// MessagesIn counts data messages received.
	MessagesIn uint64 `json:"messages_in"`
	// MessagesOut counts data messages sent.
	MessagesOut uint64 `json:"messages_out"`
}

// Add returns the sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Procs:            s.Procs + o.Procs,
		Conns:            s.Conns + o.Conns,
		Accepted:         s.Accepted + o.Accepted,
		UpgradesOK:       s.UpgradesOK + o.UpgradesOK,
		UpgradesRejected: s.UpgradesRejected + o.UpgradesRejected,
		UpgradesFailed:   s.UpgradesFailed + o.UpgradesFailed,
		EarlyRetries:     s.EarlyRetries + o.EarlyRetries,
		MessagesIn:       s.MessagesIn + o.MessagesIn,
		MessagesOut:      s.MessagesOut + o.MessagesOut,
	}
}

// counters is the live form of Stats.
type counters struct {
	conns                                        atomic.Int64
	accepted                                     atomic.Uint64
	upgradesOK, upgradesRejected, upgradesFailed atomic.Uint64
	earlyRetries, messagesIn, messagesOut        atomic.Uint64
}

// Stats returns the server's counters now.
func (s *Server) Stats() Stats {
	return Stats{
		Procs:            1,
		Conns:            s.stats.conns.Load(),
		Accepted:         s.stats.accepted.Load(),
		UpgradesOK:       s.stats.upgradesOK.Load(),
		UpgradesRejected: s.stats.upgradesRejected.Load(),
		UpgradesFailed:   s.stats.upgradesFailed.Load(),
		EarlyRetries:     s.stats.earlyRetries.Load(),
		MessagesIn:       s.stats.messagesIn.Load(),
		MessagesOut:      s.stats.messagesOut.Load(),
	}
}
