package summary

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/haproxy"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// Summary is summary.json: the run's figures, a stable contract that users'
// scripts and CI gates read (docs/summary-json.md). Fields may be added;
// none may be renamed or dropped. Times are in seconds from the run's start
// unless named otherwise.
type Summary struct {
	// RunID names the run; see NewRunID.
	RunID string `json:"run_id"`
	// Seed is the run's seed: the same seed replays every random draw.
	Seed uint64 `json:"seed"`
	// Simulated is true for the results of `stampede simulate` (package
	// sim): every figure comes from the model, none from sockets; the
	// kernel counters are the model's. Omitted for a real run.
	Simulated bool `json:"simulated,omitempty"`
	// SimulatedNote says, in one line, when a simulated run's figures lie
	// outside the range the model is calibrated on (a fleet above the
	// largest calibrated real run: sim.CalibrationNote). Omitted
	// otherwise, and from a real run.
	SimulatedNote string `json:"simulated_note,omitempty"`
	// Config is the run's configuration as JSON, kept verbatim: the
	// command line's flags in their spelling (a --config file that gives
	// them back reproduces the run), or a library caller's own struct.
	// Nothing reads it back: readers read Spec.
	Config json.RawMessage `json:"config"`
	// Spec is the run's effective config, every default applied, in the
	// JSON a plan carries (spec.Run), secrets redacted: what advise
	// --from, report and every other reader of a folder read. Nil only in
	// a folder written before it was recorded.
	Spec *spec.Run `json:"spec"`
	// Clients is the fleet's size.
	Clients int `json:"clients"`
	// Processes is the number of loadgen processes that recorded the run.
	Processes int `json:"processes"`
	// DurationS is the run's length in seconds.
	DurationS float64 `json:"duration_s"`
	// Events lists what happened to the target, in Start order.
	Events []EventSummary `json:"events"`
	// Connect counts connection attempts and their outcomes.
	Connect Connect `json:"connect"`
	// Stopped lists clients that gave up, by the class of their last error
	// (a non-retryable failure, or the policy's attempts exhausted); empty
	// when none did.
	Stopped map[string]results.Stopped `json:"stopped"`
	// ServerSpeaks is the session protocol (package session's names) the
	// server showed to clients that did not speak it (Report.Speaks): a
	// run whose clients it drops for that says so, and names the protocol
	// to speak; absent otherwise.
	ServerSpeaks string `json:"server_speaks,omitempty"`
	// Recovery holds one entry per event, in Events order.
	Recovery []Recovery `json:"recovery"`
	// LatencyMS holds the latency distributions in milliseconds.
	LatencyMS results.Latencies `json:"latency_ms"`
	// Messages counts the message protocol's outcome.
	Messages results.Messages `json:"messages"`
	// Kernel holds the kernel counter deltas over the run: host-wide (the
	// whole network namespace), not only stampede's sockets.
	Kernel results.KernelDelta `json:"kernel"`
	// KernelRead is true when Kernel was read in the network namespace
	// the target listens in. When false the counters could not be read
	// (they are 0) or belong to another host than the target's (a fleet
	// against a remote server): they say nothing about the target's
	// listener, and the listen_overflows SLO fails as null.
	KernelRead bool `json:"kernel_read"`
	// KernelNote says why KernelRead is false; empty when it is true.
	KernelNote string `json:"kernel_note,omitempty"`
	// Resources holds per-role resource figures; "loadgen" and "target"
	// are always present (all zero when the role was not sampled, e.g. a
	// target stampede does not run).
	Resources map[string]results.ResourceStats `json:"resources"`
	// TLSHandshakes holds, per role, the TLS handshakes a wss:// server
	// that stampede ran completed ("target"), full and resumed, with their
	// CPU; absent otherwise.
	TLSHandshakes map[string]results.TLSHandshakes `json:"tls_handshakes,omitempty"`
	// Machine is how busy the machine was while the run went, the run's
	// own processes apart (MachineLoad); null when it was not sampled.
	Machine *results.MachineLoad `json:"machine"`
	// SLO holds each SLO's outcome; empty when none was given.
	SLO []SLOResult `json:"slo"`
	// Checks holds the outcomes of the run's other gates: a drill's
	// deploy command (exit status 0) or its outage detected; absent when
	// there are none (docs/drill.md "Gates").
	Checks []Check `json:"checks,omitempty"`
	// Pass is true when every SLO and every check passed (true when there
	// are none).
	Pass bool `json:"pass"`
	// Complete is false when a process of the run exited when nothing
	// scheduled it (a "crash" event) or an agent was lost: the figures
	// then cover less than the run asked for.
	Complete bool `json:"complete"`
	// Interrupted is true when the run was stopped early (Ctrl-C);
	// DurationS is then the real length.
	Interrupted bool `json:"interrupted"`
	// Agents lists the run's agents (docs/agent.md).
	Agents []AgentSummary `json:"agents,omitempty"`
	// Hosts lists the hosts of a run spread over several (--agents), each
	// with the kernel counters and resources read there: the
	// coordinator's first, then each agent's in the order they were
	// placed. Absent from a run on one host.
	Hosts []results.HostSummary `json:"hosts,omitempty"`
	// HTTP holds the figures of an HTTP fleet run (stampede http
	// --clients); absent from a WebSocket run.
	HTTP *results.HTTP `json:"http,omitempty"`
	// HAProxy holds the load balancer's own counters for the run
	// (--haproxy-socket; docs/loadbalancer.md); absent without it.
	HAProxy *haproxy.Totals `json:"haproxy,omitempty"`
	// Advise holds what `stampede advise` found (Advice); absent from
	// every other run.
	Advise *Advice `json:"advise,omitempty"`
}

// AgentSummary is one agent of the run in summary.json.
type AgentSummary struct {
	// Name and Role name the agent ("loadgen 0", "loadgen").
	Name string `json:"name"`
	Role string `json:"role"`
	// Host and PID are where the agent ran.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Clients is a loadgen agent's share of the fleet.
	Clients int `json:"clients,omitempty"`
	// MaxMessageBytes is the largest message the agent sent.
	MaxMessageBytes int `json:"max_message_bytes"`
	// Lost is true when the agent's messages ended before its final one
	// (or its host went silent for hub.LossTimeout).
	Lost bool `json:"lost"`
	// ClientsLost are the clients of a lost agent's shares: from its loss
	// on, nothing more is known of them.
	ClientsLost int `json:"clients_lost"`
	// LostAtS is when the agent was found lost, from the run's start.
	LostAtS float64 `json:"lost_at_s,omitempty"`
	// ClockOffsetMS is the coordinator's clock minus the agent's, as the
	// agent estimated it (the best of several round trips), and
	// OffsetErrorMS its bound, half that round trip's time; both 0 for an
	// agent of the coordinator's machine.
	ClockOffsetMS float64 `json:"clock_offset_ms"`
	OffsetErrorMS float64 `json:"offset_error_ms"`
	// StartSkewMS is how late a loadgen agent began after the start
	// instant, on the coordinator's clock (the latest of its shares).
	StartSkewMS float64 `json:"start_skew_ms"`
}

// EventSummary is one event in summary.json.
type EventSummary struct {
	// Kind and Mode are Event's.
	Kind string `json:"kind"`
	Mode string `json:"mode"`
	// Spec is the schedule text the event came from, if any.
	Spec string `json:"spec,omitempty"`
	// StartS is when the event began.
	StartS float64 `json:"start_s"`
	// EndS is when the fault was lifted; 0 if not applicable.
	EndS float64 `json:"end_s"`
	// ReadyS is when the target was ready again; equal to StartS when the
	// event has no known readiness (the recovery clock then starts at the
	// event); null when the target was never ready again before the run
	// ended (a detected outage nobody reconnected after).
	ReadyS *float64 `json:"ready_s"`
	// OutageS is ReadyS minus StartS (docs/results.md "Recovery"); null
	// with ReadyS.
	OutageS *float64 `json:"outage_s"`
	// Detected is true when the loadgen inferred the event (DetectOutages).
	Detected bool `json:"detected"`
	// Steps are the processes of a restart that went one process at a
	// time (procs=one, rolling), in order; absent otherwise.
	Steps []StepSummary `json:"steps,omitempty"`
	// Role, PID and Exit describe a "crash": the role of the process
	// that exited unscheduled, its process id and its exit status.
	Role string `json:"role,omitempty"`
	PID  int    `json:"pid,omitempty"`
	Exit string `json:"exit,omitempty"`
	// EarlyRetries, on a reject with a Retry-After, counts upgrade
	// attempts by clients that came back sooner than they were told (the
	// target counts them); absent when not counted.
	EarlyRetries *uint64 `json:"early_retries,omitempty"`
	// Failures and Disconnects count failed attempts and ended
	// connections by class from StartS until the next event (or the
	// run's end), in whole timeline buckets: what this event made the
	// fleet see. Every class is present.
	Failures    map[string]uint64 `json:"failures"`
	Disconnects map[string]uint64 `json:"disconnects"`
	// TLSFull and TLSResumed count the wss:// successes by their TLS
	// handshake, full or resumed from the client's cached session, from
	// StartS until the next event that begins after this one's EndS and
	// ReadyS (or the run's end), in whole timeline buckets: the
	// reconnects this event brought (a server that lost its ticket keys
	// in a restart resumes none). An event that begins within this one's
	// span, a drill's detected outage within its deploy, does not cut it
	// short. Omitted for ws:// and when no client connected.
	TLSFull    uint64 `json:"tls_full,omitempty"`
	TLSResumed uint64 `json:"tls_resumed,omitempty"`
	// RTTMS is the message round trips that completed from StartS to
	// EndS (ReadyS when EndS is 0), both included, in whole timeline
	// buckets: what the event did to message latency.
	RTTMS RTTStats `json:"rtt_ms"`
	// RTTBeforeMS is the same over the second before StartS, to compare
	// RTTMS with.
	RTTBeforeMS RTTStats `json:"rtt_before_ms"`
}

// TLSResumedShare is the share (0..1) of the event's wss:// reconnects
// whose TLS handshake resumed a session; ok is false when none connected
// over TLS in its buckets (ws://, or nobody came back).
func (e EventSummary) TLSResumedShare() (share float64, ok bool) {
	n := e.TLSFull + e.TLSResumed
	if n == 0 {
		return 0, false
	}
	return float64(e.TLSResumed) / float64(n), true
}

// StepSummary is one process's part of a restart that went one process at
// a time, in seconds from the run's start.
type StepSummary struct {
	// Proc is the process's index in the target's group.
	Proc int `json:"proc"`
	// StartS is when it was told to stop, EndS when it was started again,
	// ReadyS when it began accepting.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	ReadyS float64 `json:"ready_s"`
	// Conns is how many connections the process held when told to stop:
	// the clients this step took down (-1: unknown). In a rolling
	// restart it grows from step to step, as the clients of processes
	// already restarted reconnect to the others too.
	Conns int64 `json:"conns"`
}

// Connect counts connection attempts over the run.
type Connect struct {
	// Attempts is the number of attempts started.
	Attempts uint64 `json:"attempts"`
	// Successes is the number that ended connected.
	Successes uint64 `json:"successes"`
	// Failures counts failed attempts by class; every class is present.
	Failures map[string]uint64 `json:"failures"`
	// Disconnects counts established connections that ended, by class;
	// every class is present.
	Disconnects map[string]uint64 `json:"disconnects"`
	// TLSFull and TLSResumed count the successes of wss:// clients by
	// their TLS handshake: full, or resumed from the client's session
	// cache. Omitted for ws://.
	TLSFull    uint64 `json:"tls_full,omitempty"`
	TLSResumed uint64 `json:"tls_resumed,omitempty"`
}

// SLOResult is one SLO's outcome in summary.json.
type SLOResult struct {
	// Expr is the SLO as given, e.g. "lost==0".
	Expr string `json:"expr"`
	// Value is the figure the SLO compared (seconds for a duration); null
	// when the figure has no value (an R figure never reached, or no event
	// to recover from), which fails the SLO.
	Value *float64 `json:"value"`
	// Pass reports whether it held.
	Pass bool `json:"pass"`
	// Limit is the value the figure was compared with (seconds for a
	// duration).
	Limit float64 `json:"limit"`
	// Unit is "s" for a duration figure, "" otherwise.
	Unit string `json:"unit,omitempty"`
	// Detail says the outcome for a person, e.g. "r99 = 2.31s, over by
	// 2.309s".
	Detail string `json:"detail"`
}

// SetSLO records SLO outcomes and sets Pass to whether all of them and
// every check passed.
func (s *Summary) SetSLO(results []SLOResult) {
	s.SLO = slices.Clone(results)
	if s.SLO == nil {
		s.SLO = []SLOResult{}
	}
	s.setPass()
}

// Line is the SLO's outcome as one line for a terminal, e.g.
// "SLO r99<1ms: FAIL (r99 = 2.31s, over by 2.309s)".
func (r SLOResult) Line() string {
	verdict := "pass"
	if !r.Pass {
		verdict = "FAIL"
	}
	return fmt.Sprintf("SLO %s: %s (%s)", r.Expr, verdict, r.Detail)
}

// A Check is a gate of a run that is not an SLO on a figure: a drill's
// deploy command that must exit 0, an outage that must be detected.
type Check struct {
	// Name names the gate, e.g. "deploy".
	Name string `json:"name"`
	// Pass reports whether it held.
	Pass bool `json:"pass"`
	// Detail says the outcome for a person, e.g. "`scripts/deploy.sh`
	// exited 0 after 12.3s".
	Detail string `json:"detail"`
}

// Line is the check's outcome as one line of text.
func (c Check) Line() string {
	verdict := "pass"
	if !c.Pass {
		verdict = "FAIL"
	}
	return fmt.Sprintf("check %s: %s (%s)", c.Name, verdict, c.Detail)
}

// AddChecks records check outcomes and sets Pass to whether every SLO and
// check passed.
func (s *Summary) AddChecks(checks ...Check) {
	s.Checks = append(s.Checks, checks...)
	s.setPass()
}

func (s *Summary) setPass() {
	s.Pass = true
	for _, r := range s.SLO {
		s.Pass = s.Pass && r.Pass
	}
	for _, c := range s.Checks {
		s.Pass = s.Pass && c.Pass
	}
}

// Input is what Summarize needs from a run.
type Input struct {
	// RunID names the run (NewRunID).
	RunID string
	// Seed is the run's seed.
	Seed uint64
	// Config is the run's configuration; it must marshal to JSON. nil
	// gives {}.
	Config any
	// Spec is the run's effective config (Summary.Spec); it is recorded
	// redacted.
	Spec *spec.Run
	// Report is the merged record of every loadgen process.
	Report *results.Report
	// Events are what the supervisor did, or what DetectOutages found, in
	// any order.
	Events []results.Event
	// End is the run's length; zero derives it from the report (the end
	// of the timeline or the last transition).
	End time.Duration
	// Kernel is the kernel counter delta over the run.
	Kernel results.KernelDelta
	// KernelRead says Kernel was read, on the target's host; false
	// (the zero value) makes listen_overflows null. KernelNote says why
	// not, for a person ("the counters could not be read: ...").
	KernelRead bool
	KernelNote string
	// Partials are the events' recovery partials (RecoveryPartials)
	// merged over every loadgen process, one per event of Events sorted
	// by Start (SortEvents): how a coordinator that never held the
	// fleet's transitions gets recovery figures. Nil computes them from
	// Report.Transitions.
	Partials []results.RecoveryPartial
	// Resubscribed are the same partials of the clients' re-subscribed
	// transitions (Report.Resubscribed), merged likewise; nil computes
	// them from Report.Resubscribed.
	Resubscribed []results.RecoveryPartial
	// Resources holds per-role figures (hoststat.Sampler.Stats).
	Resources map[string]results.ResourceStats
	// CPU holds each role's CPU samples in time order (resources.csv's
	// cpu_s), from which the role's CPU per connect and per reconnect are
	// computed (CPUSpans.PerConnect); a role without any has them null.
	CPU map[string][]CPUPoint
	// Syscalls holds each role's system calls as its processes counted
	// them, with the attempts they divide; a role without has its
	// syscalls per attempt null.
	Syscalls map[string]SyscallCount
}

// Summarize computes a run's Summary. Events are ordered by Start (stable)
// and recovery is computed per event (Recoveries). Pass is true and SLO
// empty: evaluate SLOs on the result and record them with SetSLO. A Config
// that does not marshal is recorded as {"error": "..."}, so the run's
// figures are never lost to it.
func Summarize(in Input) *Summary {
	r := in.Report
	if r == nil {
		r = results.NewReport(time.Time{}, 0)
	}
	end := runEnd(r, in.End)
	events := slices.Clone(in.Events)
	SortEvents(events)

	s := &Summary{
		RunID:     in.RunID,
		Seed:      in.Seed,
		Config:    configJSON(in.Config),
		Spec:      redactedSpec(in.Spec),
		Clients:   r.Clients,
		Processes: r.Processes,
		DurationS: end.Seconds(),
		Events:    make([]EventSummary, 0, len(events)),
		Connect:   ConnectOf(r.Timeline),
		Stopped:   map[string]results.Stopped{},
		Recovery:  recoveries(r, in.Partials, in.Resubscribed, events, end),
		LatencyMS: results.Latencies{
			Connect:    results.Percentiles(r.Connect),
			TTR:        results.Percentiles(r.TTR),
			MessageRTT: results.Percentiles(r.RTT),
			Resume:     results.Percentiles(r.Resume),

			MessageRTTScheduled: results.Percentiles(r.RTTScheduled),
		},
		Messages:   r.Messages,
		Kernel:     in.Kernel,
		KernelRead: in.KernelRead,
		KernelNote: kernelNote(in),
		Resources:  map[string]results.ResourceStats{results.RoleLoadgen: {}, results.RoleTarget: {}},
		SLO:        []SLOResult{},
		Pass:       true,
		Complete:   true,
	}
	s.ServerSpeaks = r.Speaks
	for i := range events {
		s.Events = append(s.Events, eventSummary(r.Timeline, events, i, end))
	}
	s.Messages.Tracked = r.Track != nil // deliveries checked: the message protocol ran
	for k, v := range r.Stopped {
		s.Stopped[k] = v
	}
	peak := peakConnected(r.Timeline)
	for k, v := range in.Resources {
		// The socket counts are sampled sparsely in large runs (hoststat's
		// TCP budget) and can miss the fleet's peak: at a million clients
		// the last count before the restart saw 306,754 of 1,000,000.
		// The fleet's own count is exact and bounds both sides' from below.
		if v.PeakConns > 0 && (k == results.RoleLoadgen || k == results.RoleTarget) && peak > v.PeakConns {
			v.PeakConns = peak
			v.PerConn()
		}
		s.Resources[k] = v
	}
	if len(in.CPU) > 0 {
		sp := cpuSpans(r.TransitionFlow(), r.Timeline, events, s.Recovery, end)
		for k, v := range s.Resources {
			if pts := in.CPU[k]; len(pts) > 0 {
				v.CPUUsPerConnect, v.CPUUsPerReconnect = sp.PerConnect(pts)
				v.CPUUsPerAttempt, v.CPUUsPerClose = sp.PerAttempt(pts)
				s.Resources[k] = v
			}
		}
	}
	for k, c := range in.Syscalls {
		if v, ok := s.Resources[k]; ok {
			setSyscalls(&v, c)
			s.Resources[k] = v
		}
	}
	return s
}

// eventSummary is events[i] as summary.json shows it, with its failures,
// disconnects and message round trips from the timeline tl.
func eventSummary(tl results.Timeline, events []results.Event, i int, end time.Duration) EventSummary {
	e := events[i]
	es := EventSummary{
		Kind:         e.Kind,
		Mode:         e.Mode,
		Spec:         e.Spec,
		StartS:       e.Start.Seconds(),
		EndS:         e.End.Seconds(),
		Detected:     e.Detected,
		EarlyRetries: e.EarlyRetries,
		Role:         e.Role,
		PID:          e.PID,
		Exit:         e.Exit,
	}
	if ready, ok := e.ReadyAt(); ok {
		es.ReadyS, es.OutageS = ptrTo(ready.Seconds()), ptrTo((ready - e.Start).Seconds())
	}
	for _, st := range e.Steps {
		es.Steps = append(es.Steps, StepSummary{Proc: st.Proc, StartS: st.Start.Seconds(), EndS: st.End.Seconds(), ReadyS: st.Ready.Seconds(), Conns: st.Conns})
	}
	es.Failures, es.Disconnects = eventClasses(tl, events, i, end)
	es.TLSFull, es.TLSResumed = eventTLS(tl, events, i, end)
	es.RTTMS, es.RTTBeforeMS = eventRTT(tl, e)
	return es
}

// peakConnected is the most clients connected at once by the timeline:
// cumulative successes minus disconnects, at each bucket's end.
func peakConnected(tl results.Timeline) int64 {
	var connected, peak int64
	for i := range tl {
		connected += int64(tl[i].Successes) - int64(tl[i].DisconnectCount())
		peak = max(peak, connected)
	}
	return peak
}

// kernelNote is why the kernel counters of in say nothing about the
// target: "" when they were read.
func kernelNote(in Input) string {
	switch {
	case in.KernelRead:
		return ""
	case in.KernelNote != "":
		return in.KernelNote
	}
	return "the kernel counters were not read"
}

// redactedSpec is the run's spec as summary.json records it: its secrets
// hidden (spec.Run.Redacted); nil stays nil.
func redactedSpec(r *spec.Run) *spec.Run {
	if r == nil {
		return nil
	}
	red := r.Redacted()
	return &red
}

// configJSON marshals a run's config for Summary.Config.
func configJSON(c any) json.RawMessage {
	if c == nil {
		return json.RawMessage("{}")
	}
	// No HTML escaping, as in WriteJSON: a redacted value reads
	// <redacted>, not \u003credacted\u003e.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		b, _ := json.Marshal(map[string]string{"error": "config not serialisable: " + err.Error()})
		return b
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ConnectOf sums the timeline's attempt counters: what summary.json's
// connect holds, and what the live page shows of a run under way.
func ConnectOf(tl results.Timeline) Connect {
	c := Connect{Failures: map[string]uint64{}, Disconnects: map[string]uint64{}}
	var fail, disc [connerr.NumClasses]uint64
	for i := range tl {
		b := &tl[i]
		c.Attempts += uint64(b.Attempts)
		c.Successes += uint64(b.Successes)
		c.TLSFull += uint64(b.TLSFull)
		c.TLSResumed += uint64(b.TLSResumed)
		for k := range b.Failures {
			fail[k] += uint64(b.Failures[k])
			disc[k] += uint64(b.Disconnects[k])
		}
	}
	for _, cl := range connerr.Classes() {
		c.Failures[cl.String()] = fail[cl]
		c.Disconnects[cl.String()] = disc[cl]
	}
	return c
}

// NewRunID names a run by its start time in UTC and the low 16 bits of its
// seed in hex, e.g. "2026-11-29T12-00-00Z-1a2b" for seed 0x1a2b: sortable,
// readable, safe in a file name, and two runs started in the same second
// with different seeds get different names.
func NewRunID(now time.Time, seed uint64) string {
	return fmt.Sprintf("%s-%04x", now.UTC().Format("2006-01-02T15-04-05Z"), seed&0xffff)
}

// recoveries is FinishRecoveries on the given merged partials, or
// Recoveries from the report's own transitions when there are none.
// Each says what its figures were measured from (Recovery.explain).
func recoveries(r *results.Report, parts, resub []results.RecoveryPartial, events []results.Event, end time.Duration) []Recovery {
	var out []Recovery
	if parts == nil {
		out = Recoveries(r, events, end)
	} else {
		out = FinishRecoveries(parts, r.Timeline, events, end)
	}
	addResubscribed(out, r, resub, events, end)
	for i := range out {
		out[i].explain(events[i], runEnd(r, end))
	}
	return out
}

// SortEvents sorts events by Start, stably, as Summarize orders them: the
// order of Input.Partials.
func SortEvents(events []results.Event) {
	slices.SortStableFunc(events, func(a, b results.Event) int { return cmp.Compare(a.Start, b.Start) })
}

// DropExplained returns events without the detected outages that an event
// with Explains set accounts for: those starting within its [Start, End]
// (its Start alone when End is not after it). Left in, such an outage
// would take the clients that event cut, since a client's disconnect
// belongs to the last event started before it (RecoveryPartials).
func DropExplained(events []results.Event) []results.Event {
	out := events[:0:0]
	for _, e := range events {
		explained := false
		for _, x := range events {
			if e.Detected && x.Explains && e.Start >= x.Start && e.Start <= max(x.End, x.Start) {
				explained = true
				break
			}
		}
		if !explained {
			out = append(out, e)
		}
	}
	return out
}

// EventName is how an event is named in timeline.csv and the report:
// kind, then mode, e.g. "restart abrupt"; "(detected)" is added to an
// event the loadgen inferred. A drill's backend event names its backend:
// "backend s2 restart".
func EventName(e EventSummary) string {
	n := e.Kind
	if e.Kind == "backend" && e.Spec != "" {
		n += " " + e.Spec
	}
	if e.Mode != "" {
		n += " " + e.Mode
	}
	if e.Detected {
		n += " (detected)"
	}
	return n
}
