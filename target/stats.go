package target

import (
	"sync/atomic"

	"github.com/stampede-dev/stampede/internal/rawsys"
	"github.com/stampede-dev/stampede/tlsconf"
)

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
	// purpose: MaxConns (503), a Reject window or shedding (Shed).
	UpgradesRejected uint64 `json:"upgrades_rejected"`
	// UpgradesShed counts the upgrades of UpgradesRejected that shedding
	// (Shed) answered 503 because they came faster than the accept rate.
	UpgradesShed uint64 `json:"upgrades_shed,omitempty"`
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
	// HTTPStatus counts the HTTP endpoint's answers per status ("200",
	// "429", ...); omitted while it answered nothing.
	HTTPStatus map[string]uint64 `json:"http_status,omitempty"`
	// IdempotentReplays counts 2xx answers of the HTTP endpoint to an
	// Idempotency-Key already answered 2xx: a logical request the backend
	// saw succeed more than once.
	IdempotentReplays uint64 `json:"idempotent_replays,omitempty"`
	// The message protocol's counters (a target with a Store), omitted
	// from JSON while zero.

	// MsgsAcked counts acks sent by the message protocol (dups included).
	MsgsAcked uint64 `json:"msgs_acked,omitempty"`
	// DupSuppressed counts msgs whose ID was stored before: ACKed with the
	// original seq and not delivered again.
	DupSuppressed uint64 `json:"dup_suppressed,omitempty"`
	// Delivered counts live deliver frames sent to room members.
	Delivered uint64 `json:"delivered,omitempty"`
	// Resumes counts resume requests answered with resumed.
	Resumes uint64 `json:"resumes,omitempty"`
	// Replayed counts deliver frames sent by resume replays.
	Replayed uint64 `json:"replayed,omitempty"`
	// ResumeGaps counts resume_gap frames: resumes that asked for history
	// the store no longer keeps.
	ResumeGaps uint64 `json:"resume_gaps,omitempty"`
	// TLS counts a wss:// target's handshakes, full and resumed, with
	// their CPU; nil for ws://.
	TLS *tlsconf.Stats `json:"tls,omitempty"`
	// Syscalls counts the system calls of the process's accept loop and
	// reactors by kind (rawsys.Counts: socket, accept4, read, close,
	// epoll_ctl...), since the process started; those the process makes
	// through the Go runtime (its netpoller, the listener's setup) are
	// not in it. The process's, not the Server's: a process that runs a
	// loadgen too counts its calls as well.
	Syscalls map[string]uint64 `json:"syscalls,omitempty"`
}

// Add returns the sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Procs:            s.Procs + o.Procs,
		Conns:            s.Conns + o.Conns,
		Accepted:         s.Accepted + o.Accepted,
		UpgradesOK:       s.UpgradesOK + o.UpgradesOK,
		UpgradesRejected: s.UpgradesRejected + o.UpgradesRejected,
		UpgradesShed:     s.UpgradesShed + o.UpgradesShed,
		UpgradesFailed:   s.UpgradesFailed + o.UpgradesFailed,
		EarlyRetries:     s.EarlyRetries + o.EarlyRetries,
		MessagesIn:       s.MessagesIn + o.MessagesIn,
		MessagesOut:      s.MessagesOut + o.MessagesOut,
		MsgsAcked:        s.MsgsAcked + o.MsgsAcked,
		DupSuppressed:    s.DupSuppressed + o.DupSuppressed,
		Delivered:        s.Delivered + o.Delivered,
		Resumes:          s.Resumes + o.Resumes,
		Replayed:         s.Replayed + o.Replayed,
		ResumeGaps:       s.ResumeGaps + o.ResumeGaps,

		HTTPStatus:        addCounts(s.HTTPStatus, o.HTTPStatus),
		IdempotentReplays: s.IdempotentReplays + o.IdempotentReplays,
		TLS:               addTLS(s.TLS, o.TLS),
		Syscalls:          addCounts(s.Syscalls, o.Syscalls),
	}
}

// addTLS returns the sum of two handshake counts, nil when both are nil.
func addTLS(a, b *tlsconf.Stats) *tlsconf.Stats {
	if a == nil && b == nil {
		return nil
	}
	var sum tlsconf.Stats
	for _, x := range []*tlsconf.Stats{a, b} {
		if x != nil {
			sum = sum.Add(*x)
		}
	}
	return &sum
}

// addCounts returns the sum of two count maps, nil when both are empty.
func addCounts(a, b map[string]uint64) map[string]uint64 {
	if len(a)+len(b) == 0 {
		return nil
	}
	m := make(map[string]uint64, len(a)+len(b))
	for k, n := range a {
		m[k] += n
	}
	for k, n := range b {
		m[k] += n
	}
	return m
}

// counters is the live form of Stats.
type counters struct {
	conns                                        atomic.Int64
	accepted                                     atomic.Uint64
	upgradesOK, upgradesRejected, upgradesFailed atomic.Uint64
	upgradesShed                                 atomic.Uint64
	inline                                       atomic.Uint64 // upgrades done in the accept loop (upgradeInline)
	earlyRetries, messagesIn, messagesOut        atomic.Uint64
	// the message protocol's
	msgsAcked, dupSuppressed, delivered atomic.Uint64
	resumes, replayed, resumeGaps       atomic.Uint64
}

// Stats returns the server's counters now.
func (s *Server) Stats() Stats {
	httpStatus, replays := s.http.stats()
	return Stats{
		HTTPStatus:        httpStatus,
		IdempotentReplays: replays,
		Procs:             1,
		Conns:             s.stats.conns.Load(),
		Accepted:          s.stats.accepted.Load(),
		UpgradesOK:        s.stats.upgradesOK.Load(),
		UpgradesRejected:  s.stats.upgradesRejected.Load(),
		UpgradesShed:      s.stats.upgradesShed.Load(),
		UpgradesFailed:    s.stats.upgradesFailed.Load(),
		EarlyRetries:      s.stats.earlyRetries.Load(),
		MessagesIn:        s.stats.messagesIn.Load(),
		MessagesOut:       s.stats.messagesOut.Load(),
		MsgsAcked:         s.stats.msgsAcked.Load(),
		DupSuppressed:     s.stats.dupSuppressed.Load(),
		Delivered:         s.stats.delivered.Load(),
		Resumes:           s.stats.resumes.Load(),
		Replayed:          s.stats.replayed.Load(),
		ResumeGaps:        s.stats.resumeGaps.Load(),
		TLS:               s.tlsStats(),
		Syscalls:          rawsys.Counts(),
	}
}

// tlsStats returns the handshake counts of a wss:// server, nil for ws://.
func (s *Server) tlsStats() *tlsconf.Stats {
	if s.tlsSrv == nil {
		return nil
	}
	st := s.tlsSrv.Stats()
	return &st
}
