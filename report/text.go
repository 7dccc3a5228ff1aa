package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// WriteText prints the summary for a person at a terminal: the fleet, each
// event with its recovery, connect failures by class, latencies, kernel
// counters, resources and SLOs. summary.json holds the same figures for
// programs.
func WriteText(w io.Writer, s *summary.Summary) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", firstLine(s))
	if s.SimulatedNote != "" {
		ew.printf("note: %s\n", s.SimulatedNote)
	}
	ew.printf("connect: %d attempts, %d successes%s\n", s.Connect.Attempts, s.Connect.Successes, classList(s.Connect.Failures, ", failures: "))
	if len(s.Events) == 0 {
		ew.printf("events: none\n")
	} else {
		writeEvents(ew, s)
	}
	writeLatencies(ew, s)
	writeHosts(ew, s)
	writeResources(ew, s)
	writeOutcomes(ew, s)
	return ew.err
}

// writeEvents prints the events' table, one row per event with its
// recovery, and each event's notes.
func writeEvents(ew *errWriter, s *summary.Summary) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "event\tstart\tready\tback/before\tnever down\tR50\tR90\tR99\tR100\therd peak/100ms\tpeak:mean\twasted/client\toutage/client\t")
	for i, e := range s.Events {
		name := e.Kind
		if e.Mode != "" {
			name += " " + e.Mode
		}
		if e.Detected {
			name += " (detected)"
		}
		ready := "never"
		if e.ReadyS != nil {
			ready = fmt.Sprintf("%.2fs", *e.ReadyS)
		}
		if i >= len(s.Recovery) {
			fmt.Fprintf(tw, "%s\t%.2fs\t%s\t\t\t\t\t\t\t\t\t\t\t\n", name, e.StartS, ready)
			continue
		}
		r := s.Recovery[i]
		fmt.Fprintf(tw, "%s\t%.2fs\t%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			name, e.StartS, ready, r.Recovered, r.ConnectedBefore, r.NeverDown,
			secsUnit(r, r.R50S), secsUnit(r, r.R90S), secsUnit(r, r.R99S), secsUnit(r, r.R100S),
			CountText(r.HerdPeakPer100ms), FloatText(r.HerdPeakToMean, 1),
			FloatText(r.WastedAttemptsPerClient, 2), FloatText(r.OutageAttemptsPerClient, 2))
	}
	ew.err = firstErr(ew.err, tw.Flush())
	for _, r := range s.Recovery {
		if r.Note != "" {
			ew.printf("  event %d: %s\n", r.Event, r.Note)
		}
		if x := r.Resubscribed; x != nil {
			ew.printf("  event %d: re-subscribed %d/%d, R50 %s R90 %s R99 %s R100 %s (back: R99 %s)\n", r.Event,
				x.Recovered, x.SubscribedBefore, secsUnit(r, x.R50S), secsUnit(r, x.R90S), secsUnit(r, x.R99S), secsUnit(r, x.R100S), secsUnit(r, r.R99S))
		}
		if r.AttemptsExhausted > 0 {
			ew.printf("  event %d: %d gave up (attempts exhausted), %d still retrying at the end\n", r.Event, r.AttemptsExhausted, r.StillRetrying)
		}
	}
	for i, e := range s.Events {
		if share, ok := e.TLSResumedShare(); ok {
			ew.printf("  event %d: TLS handshakes of the connects from it on: %d full, %d resumed (%.1f%% resumed)\n",
				i, e.TLSFull, e.TLSResumed, 100*share)
		}
	}
}

// writeLatencies prints the latency percentiles and the message counts.
func writeLatencies(ew *errWriter, s *summary.Summary) {
	ew.printf("latency ms: connect %s; ttr %s", lat(s.LatencyMS.Connect), lat(s.LatencyMS.TTR))
	if s.LatencyMS.MessageRTT.Count > 0 {
		ew.printf("; message rtt %s", lat(s.LatencyMS.MessageRTT))
		if l := s.LatencyMS.MessageRTTScheduled; l.Count > 0 {
			ew.printf(" (from the scheduled send %s)", lat(l))
		}
	}
	ew.printf("\n")
	switch m := s.Messages; {
	case m.Tracked:
		ew.printf("messages: sent %d, acked %d, retried %d, dup_suppressed %d, dup_delivered %d, lost %d, resumed %d\n",
			m.Sent, m.Acked, m.Retried, m.DupSuppressed, m.DupDelivered, m.Lost, m.Resumed)
		ew.printf("deliveries: expected %d, received %d, unsynced %d, unacked %d, bad_frames %d, resume gaps %d, dropped unacked (retry queue off) %d\n",
			m.Expected, m.Received, m.Unsynced, m.Unacked, m.BadFrames, m.ResumeGap, m.UnackedDropped)
	case m.Sent > 0:
		ew.printf("messages: sent %d, delivered %d; deliveries not checked (no message protocol): lost, unsynced, unacked, bad_frames -\n",
			m.Sent, m.Delivered)
	}
}

// writeHosts prints the kernel counters, per host too, HAProxy's figures
// and the machine's load.
func writeHosts(ew *errWriter, s *summary.Summary) {
	k := s.Kernel
	kernel := "kernel" + simulatedTag(s)
	if s.KernelRead {
		ew.printf("%s: ListenOverflows %d, ListenDrops %d, TCPSynRetrans %d, SYN cookies sent %d\n",
			kernel, k.ListenOverflows, k.ListenDrops, k.TCPSynRetrans, k.SyncookiesSent)
	} else {
		note := s.KernelNote
		if note == "" {
			note = "the kernel counters were not read"
		}
		ew.printf("%s: - (%s)\n", kernel, note)
	}
	for _, h := range s.Hosts {
		if h.Kernel == nil {
			ew.printf("  host %s (%s): - (%s)\n", h.Name, strings.Join(h.Roles, ", "), h.KernelNote)
			continue
		}
		ew.printf("  host %s (%s): ListenOverflows %d, PassiveOpens %d, ActiveOpens %d, TCPSynRetrans %d\n",
			h.Name, strings.Join(h.Roles, ", "), h.Kernel.ListenOverflows, h.Kernel.PassiveOpens, h.Kernel.ActiveOpens, h.Kernel.TCPSynRetrans)
	}
	if s.HAProxy != nil {
		writeHAProxy(ew, s.HAProxy)
	}
	if m := s.Machine; m != nil {
		ew.printf("machine: %s\n", m.Text())
	}
}

// writeResources prints each role's resources.
func writeResources(ew *errWriter, s *summary.Summary) {
	for _, role := range []string{results.RoleLoadgen, results.RoleTarget, results.RoleProxy, results.RoleCoordinator} {
		r, ok := s.Resources[role]
		if !ok || r.Processes == 0 {
			continue
		}
		ew.printf("%s: peak RSS %.1f MiB, CPU %.1fs, peak fds %d, %d process(es)",
			role+simulatedTag(s), float64(r.PeakRSSBytes)/(1<<20), r.CPUSeconds, r.PeakFDs, r.Processes)
		if r.PeakConns > 0 {
			ew.printf("; per connection (%d): RSS %d B, kernel socket buffers %d B",
				r.PeakConns, r.RSSPerConnBytes, r.SocketMemPerConnBytes)
		}
		if r.CPUUsPerConnect != nil || r.CPUUsPerReconnect != nil {
			ew.printf("; CPU per connect %s, per reconnect %s", usText(r.CPUUsPerConnect), usText(r.CPUUsPerReconnect))
		}
		ew.printf("\n")
		if h, ok := s.TLSHandshakes[role]; ok {
			ew.printf("  TLS handshakes: %d full (CPU %s each), %d resumed (CPU %s each)\n", h.Full, usText(h.FullCPUUs), h.Resumed, usText(h.ResumedCPUUs))
		}
	}
}

// writeOutcomes prints the clients that gave up, the SLOs and the checks.
func writeOutcomes(ew *errWriter, s *summary.Summary) {
	names := make([]string, 0, len(s.Stopped))
	for n := range s.Stopped {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := s.Stopped[n]
		if n == results.AttemptsExhausted {
			ew.printf("stopped: %d client(s) ran out of attempts; the last error: %s\n", st.Count, st.LastError)
			continue
		}
		ew.printf("stopped: %d client(s) gave up after %s: %s\n", st.Count, n, st.LastError)
	}
	for _, r := range s.SLO {
		ew.printf("%s\n", r.Line())
	}
	for _, c := range s.Checks {
		ew.printf("%s\n", c.Line())
	}
}

// firstLine says what ran: a simulated run says so first, and that it
// had no sockets and no processes, so that none of it reads as measured.
func firstLine(s *summary.Summary) string {
	if s.Simulated {
		return fmt.Sprintf("simulated run %s  seed %d  %d clients in the model, %.1fs of virtual time: no sockets, no processes",
			s.RunID, s.Seed, s.Clients, s.DurationS)
	}
	return fmt.Sprintf("run %s  seed %d  %d clients in %d loadgen process(es), %.1fs", s.RunID, s.Seed, s.Clients, s.Processes, s.DurationS)
}

// simulatedTag marks a line that would read as a measurement: " (simulated)"
// for a simulated run, "" otherwise.
func simulatedTag(s *summary.Summary) string {
	if s.Simulated {
		return " (simulated)"
	}
	return ""
}

// classList renders the non-zero classes of m as "a 3, b 1" after prefix,
// largest first; "" when all are zero.
func classList(m map[string]uint64, prefix string) string {
	nv := nonZero(m)
	if len(nv) == 0 {
		return ""
	}
	parts := make([]string, len(nv))
	for i, x := range nv {
		parts[i] = x.Name + " " + x.Value
	}
	return prefix + strings.Join(parts, ", ")
}

// secsUnit is RText with a unit when there is a value.
func secsUnit(r summary.Recovery, p *float64) string {
	if p == nil {
		return RText(r, p)
	}
	return RText(r, p) + "s"
}

func lat(l results.Latency) string {
	if l.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %.1f p90 %.1f p99 %.1f max %.1f", l.P50, l.P90, l.P99, l.Max)
}

// errWriter keeps the first write error so a long print checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// usText is a CPU figure in µs, or "-" when it is null.
func usText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f µs", *v)
}
