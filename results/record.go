// Package results is the record model of a run: what the roles record and
// send (Report, its timeline, histograms, transitions and messages, the
// chaos Events, the recovery partials), the stream that records it
// (Stream) and the assembler that merges pieces of it (Assembler, Piece),
// with the host figures package hoststat samples. It computes no summary
// and touches no file; its subpackages do:
//
//	loadgen processes ──Report──┐
//	                             ├─ Merge ─> summary.Summarize ─> Summary ─> folder.Write ─> summary.json
//	supervisor ───────Events─────┘          slo.EvalSLOs ─┘                   report.Render ─> report.html
//
// A Report is what one loadgen process (or the merge of several) recorded;
// Events are what the chaos supervisor did to the target, or what the
// loadgen detected itself when nothing supervised the target.
package results

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/track"
)

// Tick is the width of one timeline bucket and of the herd-peak window.
const Tick = backoff.HerdWindow

// Bucket holds the counters of one Tick of the run, summed over clients.
type Bucket struct {
	// Attempts is the number of connection attempts started (SYN sent).
	Attempts uint32 `json:"attempts"`
	// Successes is the number of attempts that ended connected (and resumed,
	// where the protocol resumes).
	Successes uint32 `json:"successes"`
	// Failures counts failed attempts by connerr.Class.
	Failures [connerr.NumClasses]uint32 `json:"failures"`
	// Disconnects counts established connections that ended, by class.
	Disconnects [connerr.NumClasses]uint32 `json:"disconnects"`
	// MsgSent, MsgAcked and MsgDelivered count protocol messages sent by
	// clients, ACKed by the server, and delivered to clients.
	MsgSent      uint32 `json:"msg_sent"`
	MsgAcked     uint32 `json:"msg_acked"`
	MsgDelivered uint32 `json:"msg_delivered"`
	// RTTCount, RTTSumMicros and RTTMaxMicros aggregate the message round
	// trips (those recorded into Report.RTT) that completed in the bucket:
	// how many, their sum and their largest, in µs (see RecordRTT).
	RTTCount     uint32 `json:"rtt_count,omitempty"`
	RTTSumMicros uint64 `json:"rtt_sum_us,omitempty"`
	RTTMaxMicros uint32 `json:"rtt_max_us,omitempty"`
	// Exhausted counts clients that gave up in the bucket because their
	// policy's attempts were exhausted (Stopped's AttemptsExhausted).
	Exhausted uint32 `json:"exhausted,omitempty"`
	// TLSFull and TLSResumed count the wss:// successes whose TLS
	// handshake was full, or resumed a session.
	TLSFull    uint32 `json:"tls_full,omitempty"`
	TLSResumed uint32 `json:"tls_resumed,omitempty"`
}

// Add sums o into b.
func (b *Bucket) Add(o *Bucket) {
	b.Attempts += o.Attempts
	b.Successes += o.Successes
	for i := range b.Failures {
		b.Failures[i] += o.Failures[i]
		b.Disconnects[i] += o.Disconnects[i]
	}
	b.MsgSent += o.MsgSent
	b.MsgAcked += o.MsgAcked
	b.MsgDelivered += o.MsgDelivered
	b.RTTCount += o.RTTCount
	b.RTTSumMicros += o.RTTSumMicros
	b.RTTMaxMicros = max(b.RTTMaxMicros, o.RTTMaxMicros)
	b.Exhausted += o.Exhausted
	b.TLSFull += o.TLSFull
	b.TLSResumed += o.TLSResumed
}

// FailureCount is the number of failed attempts of every class.
func (b *Bucket) FailureCount() uint32 {
	var n uint32
	for _, f := range b.Failures {
		n += f
	}
	return n
}

// DisconnectCount is the number of connections that ended, of every class.
func (b *Bucket) DisconnectCount() uint32 {
	var n uint32
	for _, f := range b.Disconnects {
		n += f
	}
	return n
}

// Timeline is the run's counters per Tick, bucket i covering
// [i*Tick, (i+1)*Tick) from the run's start. It grows as needed.
type Timeline []Bucket

// At returns the bucket that holds offset off from the run's start, growing
// the timeline. A negative offset lands in bucket 0.
func (t *Timeline) At(off time.Duration) *Bucket {
	i := 0
	if off > 0 {
		i = int(off / Tick)
	}
	if i >= len(*t) {
		if i < cap(*t) {
			*t = (*t)[:i+1]
		} else {
			n := make(Timeline, i+1, 2*(i+1))
			copy(n, *t)
			*t = n
		}
	}
	return &(*t)[i]
}

// Merge sums o into t bucket by bucket.
func (t *Timeline) Merge(o Timeline) {
	if len(o) > 0 {
		t.At(time.Duration(len(o)-1) * Tick)
	}
	for i := range o {
		(*t)[i].Add(&o[i])
	}
}

// Transition is one client going up (connected, and resumed where the
// protocol resumes) or down (its connection ended) at an offset from the
// run's start. Recovery is computed from these. Its fields are in this
// order so that it takes 16 bytes, not 24: a loadgen process keeps every
// transition of its clients until the run ends.
type Transition struct {
	Client uint32        `json:"c"`
	Up     bool          `json:"up"`
	At     time.Duration `json:"t"`
}

// AttemptsExhausted is the key of Report.Stopped and Summary.Stopped that
// counts the clients whose policy ran out of attempts (signalr after 4
// retries, attempts=N), whatever their last failure; the other keys are
// the classes of failures retrying cannot fix.
const AttemptsExhausted = "attempts_exhausted"

// Stopped describes clients that gave up: a non-retryable failure or the
// policy's attempts exhausted.
type Stopped struct {
	// Count is the number of clients stopped for this reason.
	Count int `json:"count"`
	// LastError is the readable last error of one such client.
	LastError string `json:"last_error"`
}

// Messages counts the message protocol's outcome; see docs/metrics.md
// "Messages". Sent, Acked, Retried, Resumed, ResumeGap, Delivered,
// Unacked, UnackedDropped and Skipped are counted live by each process;
// Expected, Received, Lost, DupDelivered, LossClients, Unsynced and
// SeqConflicts are set once from the merged Track (loadgen.Tally).
type Messages struct {
	// Sent counts messages created and sent (a resend is Retried).
	Sent uint64 `json:"sent"`
	// Acked counts messages whose first ACK arrived.
	Acked   uint64 `json:"acked"`
	Retried uint64 `json:"retried"`
	// DupSuppressed counts resends the server ACKed without storing again.
	DupSuppressed uint64 `json:"dup_suppressed"`
	DupDelivered  uint64 `json:"dup_delivered"`
	Lost          uint64 `json:"lost"`
	// Resumed counts resumes completed after a reconnect.
	Resumed uint64 `json:"resumed"`
	// ResumeGap counts resume_gap answers: history the store no longer
	// kept (the messages themselves count in Lost).
	ResumeGap uint64 `json:"resume_gap"`
	// Delivered counts deliveries received (echoes in echo mode).
	Delivered uint64 `json:"delivered"`
	// Expected counts the messages clients should have received: per
	// client, the ACKed messages of its room after its join point, not its
	// own (see package results/track).
	Expected uint64 `json:"expected"`
	// Received counts the expected messages that arrived; Lost is Expected
	// minus Received.
	Received uint64 `json:"received"`
	// Unacked counts messages still waiting for their ACK when the run
	// ended (in retry queues): neither lost nor delivered.
	Unacked uint64 `json:"unacked"`
	// UnackedDropped counts un-ACKed messages thrown away at a disconnect
	// because the retry queue was off: never resent, never ACKed.
	UnackedDropped uint64 `json:"unacked_dropped"`
	// Skipped counts messages not sent at their time because the client's
	// socket was backed up or its retry queue full.
	Skipped uint64 `json:"skipped"`
	// LossClients is the number of clients that lost at least one message.
	LossClients uint64 `json:"loss_clients"`
	// Unsynced is the number of clients that ended the run away or not yet
	// resumed: what was sent after they left is not counted against them.
	Unsynced uint64 `json:"unsynced"`
	// SeqConflicts counts seqs seen with two different messages (a server
	// fault).
	SeqConflicts uint64 `json:"seq_conflicts"`
	// BadFrames counts frames from the server that did not decode as the
	// protocol (a server fault); clients skip them.
	BadFrames uint64 `json:"bad_frames"`
	// Tracked is true when the run spoke the message protocol and its
	// deliveries were checked (a report with a Track, loadgen.Tally).
	// When false, Expected, Received, Lost, DupDelivered, LossClients,
	// Unsynced, SeqConflicts, Unacked and BadFrames were not measured:
	// they are 0 and an SLO on them fails as null (docs/summary-json.md
	// "messages").
	Tracked bool `json:"tracked"`
}

// Add sums o into m.
func (m *Messages) Add(o Messages) {
	m.Sent += o.Sent
	m.Acked += o.Acked
	m.Retried += o.Retried
	m.DupSuppressed += o.DupSuppressed
	m.DupDelivered += o.DupDelivered
	m.Lost += o.Lost
	m.Resumed += o.Resumed
	m.ResumeGap += o.ResumeGap
	m.Delivered += o.Delivered
	m.Expected += o.Expected
	m.Received += o.Received
	m.Unacked += o.Unacked
	m.UnackedDropped += o.UnackedDropped
	m.Skipped += o.Skipped
	m.LossClients += o.LossClients
	m.Unsynced += o.Unsynced
	m.SeqConflicts += o.SeqConflicts
	m.BadFrames += o.BadFrames
	m.Tracked = m.Tracked || o.Tracked
}

// Histogram ranges: every latency is recorded in microseconds from 1 µs to
// one hour with three significant digits.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// NewHistogram returns an empty latency histogram in microseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFigs)
}

// RecordLatency records d into h in microseconds, clamped to the histogram's
// range so an outlier is counted rather than dropped.
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	_ = h.RecordValue(us) // cannot fail: the value is within range
}

// Report is what one loadgen process recorded, or the merge of several. All
// offsets are from Start, the run's common start instant.
type Report struct {
	// Start is the run's start (wall clock), shared by every process.
	Start time.Time `json:"start"`
	// Clients is the number of clients this report covers.
	Clients int `json:"clients"`
	// Processes is the number of loadgen processes merged into it.
	Processes int `json:"processes"`
	// Timeline holds the counters per Tick.
	Timeline Timeline `json:"timeline"`
	// Transitions lists every client going up or down, in any order.
	Transitions []Transition `json:"transitions"`
	// Resubscribed lists every client of a session protocol going
	// re-subscribed (every subscription acknowledged again: Up) or losing
	// that session (Down), in any order; nil without a session protocol.
	// Recovery to re-subscribed is computed from these as recovery to
	// back is from Transitions.
	Resubscribed []Transition `json:"resubscribed,omitempty"`
	// Speaks is the session protocol (session.Protocols) the server
	// showed to clients that did not speak it: Engine.IO's open packet,
	// ActionCable's welcome, graphql-ws's close for a missing
	// subprotocol; empty when it showed none or they spoke it.
	Speaks string `json:"speaks,omitempty"`
	// Connect is the connect latency (SYN to the 101 answer) in µs.
	Connect *hdrhistogram.Histogram `json:"-"`
	// TTR is each client's time to recover in µs: from detecting the
	// disconnect to being connected (and resumed) again.
	TTR *hdrhistogram.Histogram `json:"-"`
	// RTT is the message round trip (send to ACK, or echo) in µs.
	RTT *hdrhistogram.Histogram `json:"-"`
	// RTTScheduled is the same round trips measured from when each message
	// was scheduled to be sent (1/MsgRate per client) rather than when it
	// went out, in µs: a send delayed by a busy reactor, a backed-up socket
	// or a reconnect counts against the latency, so coordinated omission is
	// corrected (docs/results.md).
	RTTScheduled *hdrhistogram.Histogram `json:"-"`
	// Resume is the resume latency (resume sent to resumed) in µs.
	Resume *hdrhistogram.Histogram `json:"-"`
	// Intervals holds the same five distributions per interval of the
	// run's time axis (Intervals.Length, one second by default): what the
	// .hlog files are written from. Merged, they equal the totals above;
	// nil in a report of an older stampede, whose logs then get one
	// interval for the whole run. See docs/results.md "Streamed results".
	Intervals *Intervals `json:"intervals,omitempty"`
	// Messages counts the message protocol's outcome.
	Messages Messages `json:"messages"`
	// Track is what the clients saw of the message protocol, per room and
	// per client, for counting loss and duplicates over the whole fleet
	// once the reports are merged; nil outside the stampede mode.
	Track *track.Record `json:"track,omitempty"`
	// Flow is the fleet's transitions counted per millisecond: what a
	// coordinator gets instead of Transitions (which stay with each
	// loadgen process); nil in a report of one process, whose flow is
	// FlowOf(Transitions). See TransitionFlow.
	Flow Flow `json:"flow,omitempty"`
	// Stopped lists clients that gave up, by the class of their last error.
	Stopped map[string]Stopped `json:"stopped,omitempty"`
}

// NewReport returns an empty report for a run that starts at start.
func NewReport(start time.Time, clients int) *Report {
	return &Report{
		Start:     start,
		Clients:   clients,
		Processes: 1,
		Connect:   NewHistogram(),
		TTR:       NewHistogram(),
		RTT:       NewHistogram(),
		Resume:    NewHistogram(),
		Intervals: NewIntervals(DefaultInterval),

		RTTScheduled: NewHistogram(),
	}
}

// Merge adds o into r: counters are summed, histograms merged (never
// averaged), transitions appended. Both must share one Start, and every
// histogram the range and precision of NewHistogram (ErrHistogramConfig:
// merging others would approximate).
func (r *Report) Merge(o *Report) error {
	if !o.Start.Equal(r.Start) {
		return fmt.Errorf("results: merging reports of different starts: %s and %s", r.Start, o.Start)
	}
	for d := range NumDists {
		if h := *o.Hist(d); h != nil {
			if err := CheckHistogram(h); err != nil {
				return fmt.Errorf("%w (%s)", err, d)
			}
		}
	}
	if o.Intervals != nil {
		if r.Intervals == nil || r.Intervals.Len() == 0 && r.Intervals.Length != o.Intervals.Length {
			r.Intervals = NewIntervals(o.Intervals.Length) // an empty report takes the first one's length
		}
		if err := r.Intervals.Merge(o.Intervals); err != nil {
			return err
		}
	}
	r.Clients += o.Clients
	r.Processes += o.Processes
	r.Timeline.Merge(o.Timeline)
	r.Transitions = append(r.Transitions, o.Transitions...)
	r.Resubscribed = append(r.Resubscribed, o.Resubscribed...)
	if r.Speaks == "" {
		r.Speaks = o.Speaks
	}
	for _, p := range [...]struct{ dst, src *hdrhistogram.Histogram }{
		{r.Connect, o.Connect}, {r.TTR, o.TTR}, {r.RTT, o.RTT}, {r.Resume, o.Resume},
		{r.RTTScheduled, o.RTTScheduled},
	} {
		if p.src != nil {
			p.dst.Merge(p.src)
		}
	}
	r.Messages.Add(o.Messages)
	if o.Flow != nil {
		r.Flow = r.TransitionFlow().Merge(o.Flow)
	}
	if o.Track != nil {
		if r.Track == nil {
			r.Track = &track.Record{}
		}
		r.Track.Merge(o.Track)
	}
	for k, v := range o.Stopped {
		if r.Stopped == nil {
			r.Stopped = map[string]Stopped{}
		}
		cur := r.Stopped[k]
		cur.Count += v.Count
		if cur.LastError == "" {
			cur.LastError = v.LastError
		}
		r.Stopped[k] = cur
	}
	return nil
}

// Event is one thing that happened to the target, on the run's time axis.
type Event struct {
	// Kind is what happened: "restart", "stall", "backlog", "proxy", or
	// "outage" for one the loadgen detected itself.
	Kind string `json:"kind"`
	// Mode qualifies Kind, e.g. "abrupt", "graceful", "kill".
	Mode string `json:"mode,omitempty"`
	// Spec is the schedule text the event came from.
	Spec string `json:"spec,omitempty"`
	// Start is when the event began, from the run's start.
	Start time.Duration `json:"-"`
	// End is when the fault was lifted (for a restart: the new process
	// started listening); zero if not applicable.
	End time.Duration `json:"-"`
	// Ready is when the target was ready to serve again; zero means
	// unknown, and the recovery clock starts at Start.
	Ready time.Duration `json:"-"`
	// NeverReady is true when the target was not ready again before the
	// run ended (a detected outage nobody reconnected after): Ready is
	// then meaningless, and so is every figure that runs from it.
	NeverReady bool `json:"never_ready,omitempty"`
	// Detected is true when the loadgen inferred the event from its clients
	// rather than being told by a supervisor.
	Detected bool `json:"detected,omitempty"`
	// Explains is true when the event is the cause of an outage its clients
	// detect from its Start to its End (a drill's backend restart): a
	// detected outage that starts then is the same one (DropExplained).
	Explains bool `json:"-"`
	// Steps are the processes of a restart that went one process at a
	// time (procs=one, rolling), in order.
	Steps []Step `json:"-"`
	// EarlyRetries, for a reject with a Retry-After, counts upgrade
	// attempts by clients that came back sooner than they were told; nil
	// when not counted.
	EarlyRetries *uint64 `json:"-"`
	// Role, PID and Exit describe a "crash" (a process that exited when
	// nothing scheduled it): its role, process id and exit status.
	Role string `json:"-"`
	PID  int    `json:"-"`
	Exit string `json:"-"`
}

// Step is one process's part of a restart that went one process at a
// time, on the run's time axis.
type Step struct {
	// Proc is the process's index in the target's group.
	Proc int
	// Start is when it was told to stop, End when it was started again,
	// Ready when it began accepting.
	Start, End, Ready time.Duration
	// Conns is how many connections it held when told to stop (-1:
	// unknown).
	Conns int64
}

// TransitionFlow returns the report's flow of transitions: Flow when it
// was assembled from several processes, else the flow of its Transitions.
func (r *Report) TransitionFlow() Flow {
	if r.Flow != nil {
		return r.Flow
	}
	return FlowOf(r.Transitions)
}

// FirstConnects returns how many clients connected at least once and the
// end of the millisecond in which the last of them first did: the fleet's
// first-connect rate is n / last.
func (r *Report) FirstConnects() (n int, last time.Duration) {
	return r.TransitionFlow().FirstConnects()
}

// ClockStart is when the recovery clock of e starts: its Ready, or its
// Start when Ready is unknown (zero, or before Start, or never).
func (e Event) ClockStart() time.Duration {
	return max(e.Ready, e.Start)
}

// ReadyAt is ClockStart, and false when the target was never ready again
// (Event.NeverReady).
func (e Event) ReadyAt() (time.Duration, bool) {
	if e.NeverReady {
		return 0, false
	}
	return e.ClockStart(), true
}

// RecordRTT adds one message round trip of d to the bucket's RTT
// aggregates, clamped to the range RecordLatency records into a histogram,
// so the bucket counts exactly the round trips Report.RTT holds.
func (b *Bucket) RecordRTT(d time.Duration) {
	us := min(max(int64(d/time.Microsecond), histMin), histMax)
	b.RTTCount++
	b.RTTSumMicros += uint64(us)
	b.RTTMaxMicros = max(b.RTTMaxMicros, uint32(us))
}
