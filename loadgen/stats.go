package loadgen

import "github.com/stampede-dev/stampede/connerr"

// Stats is a snapshot of a fleet's live counters for progress output. Each
// counter is exact, but the snapshot is not atomic across counters or
// reactors: a client may be counted in Successes a moment before
// Connected. After Run returns, the counters keep their values at the end
// of the run. Arrays are indexed by connerr.Class.
type Stats struct {
	// Clients is the fleet size.
	Clients int `json:"clients"`
	// Connected is the number of clients connected now.
	Connected int64 `json:"connected"`
	// Inflight is the number of attempts connecting or handshaking now.
	Inflight int64 `json:"inflight"`
	// Attempts counts connection attempts started.
	Attempts uint64 `json:"attempts"`
	// Successes counts attempts that ended connected.
	Successes uint64 `json:"successes"`
	// Failures counts failed attempts by class.
	Failures [connerr.NumClasses]uint64 `json:"failures"`
	// Disconnects counts established connections that ended, by class.
	Disconnects [connerr.NumClasses]uint64 `json:"disconnects"`
	// Stopped counts clients that gave up, by the class of their last
	// failure.
	Stopped [connerr.NumClasses]uint64 `json:"stopped"`
	// MsgSent and MsgDelivered count echo messages sent and echoed back,
	// or stampede messages sent and deliveries received.
	MsgSent      uint64 `json:"msg_sent"`
	MsgDelivered uint64 `json:"msg_delivered"`
	// MsgAcked counts stampede messages ACKed.
	MsgAcked uint64 `json:"msg_acked"`
	// Subscribed is the number of clients of a session protocol
	// re-subscribed now (every subscription acknowledged on their current
	// connection).
	Subscribed int64 `json:"subscribed,omitempty"`
	// Syscalls counts the system calls of the process's reactors by kind
	// (rawsys.Counts: socket, connect, close, epoll_ctl...), since the
	// process started: the process's, not the fleet's, so Add sums the
	// counts of separate processes (a run's loadgen workers).
	Syscalls map[string]uint64 `json:"syscalls,omitempty"`
}

// FailureCount is the number of failed attempts of every class.
func (s *Stats) FailureCount() uint64 { return sum(&s.Failures) }

// DisconnectCount is the number of connections that ended, of every class.
func (s *Stats) DisconnectCount() uint64 { return sum(&s.Disconnects) }

// StoppedCount is the number of clients that gave up.
func (s *Stats) StoppedCount() uint64 { return sum(&s.Stopped) }

// Add sums o into s (for merging the stats of several fleets or workers).
func (s *Stats) Add(o *Stats) {
	s.Clients += o.Clients
	s.Connected += o.Connected
	s.Inflight += o.Inflight
	s.Attempts += o.Attempts
	s.Successes += o.Successes
	for i := range s.Failures {
		s.Failures[i] += o.Failures[i]
		s.Disconnects[i] += o.Disconnects[i]
		s.Stopped[i] += o.Stopped[i]
	}
	s.MsgSent += o.MsgSent
	s.MsgDelivered += o.MsgDelivered
	s.MsgAcked += o.MsgAcked
	s.Subscribed += o.Subscribed
	if len(o.Syscalls) > 0 && s.Syscalls == nil {
		s.Syscalls = make(map[string]uint64, len(o.Syscalls))
	}
	for k, n := range o.Syscalls {
		s.Syscalls[k] += n
	}
}

func sum(a *[connerr.NumClasses]uint64) uint64 {
	var n uint64
	for _, v := range a {
		n += v
	}
	return n
}

// snapshot adds c's counters into s.
func (c *counters) snapshot(s *Stats) {
	s.Connected += c.connected.Load()
	s.Inflight += c.inflight.Load()
	s.Attempts += c.attempts.Load()
	s.Successes += c.successes.Load()
	for i := range s.Failures {
		s.Failures[i] += c.failures[i].Load()
		s.Disconnects[i] += c.disconnects[i].Load()
		s.Stopped[i] += c.stopped[i].Load()
	}
	s.MsgSent += c.msgSent.Load()
	s.MsgDelivered += c.msgDelivered.Load()
	s.MsgAcked += c.msgAcked.Load()
	s.Subscribed += c.subscribed.Load()
}
