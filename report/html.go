package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

// File is the report's name in a results folder.
const File = "report.html"

var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed page.js
	pageJS string
	//go:embed page.html.tmpl
	pageTmpl string
)

var page = template.Must(template.New("report").Funcs(template.FuncMap{"breakable": breakable}).Parse(pageTmpl))

// breakable escapes s for HTML and lets a line break after each sep, and
// only there, so a long folder name or policy spec wraps in a table cell
// at its natural joints (`exp:initial=1s,<wbr>max=60s`) instead of
// widening the table: each part is a span that never wraps, since a
// browser would otherwise break "initial-1s" after its hyphen.
func breakable(s, sep string) template.HTML {
	parts := strings.Split(s, sep)
	for i, p := range parts {
		if i < len(parts)-1 {
			p += sep
		}
		parts[i] = `<span class="nw">` + template.HTMLEscapeString(p) + `</span>`
	}
	return template.HTML(strings.Join(parts, "<wbr>"))
}

// Write renders report.html for one run, or a comparison of several (the
// policies side by side first, then each run), into w.
func Write(w io.Writer, runs []*Run) error { return write(w, runs, Live{}) }

// Live is what the live page (report/live) adds to the report's own page:
// a panel under the title and a script that feeds the page from a stream.
type Live struct {
	// Panel is HTML shown under the title.
	Panel template.HTML
	// Script runs after the report's own script, which it can call as
	// window.stampedeReport.draw(data) with data as DataJSON writes it.
	Script template.JS
}

// WriteLive renders the report's page of runs (a run so far) with live's
// panel and script: the page a run shows while it goes.
func WriteLive(w io.Writer, runs []*Run, live Live) error { return write(w, runs, live) }

// DataJSON returns the data the page of runs draws its plots from, as
// report.html holds it (its DATA).
func DataJSON(runs []*Run) ([]byte, error) {
	data, err := json.Marshal(buildData(runs))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return data, nil
}

func write(w io.Writer, runs []*Run, live Live) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: no run to render")
	}
	data, err := DataJSON(runs)
	if err != nil {
		return err
	}
	v := view{
		Data:     template.JS(data), // json.Marshal escapes <, > and &: safe in a script
		UPlotJS:  template.JS(uplotJS),
		UPlotCSS: template.CSS(uplotCSS),
		PageJS:   template.JS(pageJS),
		Live:     live.Panel,
		LiveJS:   live.Script,
	}
	// The title says what the page is; each run's section says its run
	// id, seed and folder once, under its label (the title's, for one run).
	v.Title = fmt.Sprintf("stampede: %d runs compared", len(runs))
	if v.Single = len(runs) == 1; v.Single {
		v.Title = "stampede: " + runs[0].Label
	}
	if n := simulatedCount(runs); n > 0 && !v.Single {
		v.Title += fmt.Sprintf(", %d of them simulated", n)
	}
	v.MixedBanner = MixedBanner(runs)
	for _, r := range runs {
		v.Runs = append(v.Runs, runView(r))
		v.Compare = append(v.Compare, compareRow(r))
		if m := r.Summary.Machine; m != nil && m.Busy {
			v.Busy = append(v.Busy, nameValue{r.Name, m.BusyReason})
		}
	}
	v.HTTPCompare = httpCompare(runs)
	v.SimError = simError(runs)
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// WriteFile renders the report into path, as every file of a results
// folder is written (folder.WriteFile): it shows the run's config and
// figures.
func WriteFile(path string, runs []*Run) error {
	var b bytes.Buffer
	if err := Write(&b, runs); err != nil {
		return err
	}
	return folder.WriteBytes(path, b.Bytes())
}

// Render loads the results folder dir and writes dir/report.html: what a
// run does at its end, and `stampede report DIR` does again later.
func Render(dir string) error {
	run, err := Load(dir)
	if err != nil {
		return err
	}
	if run.Summary.Advise != nil {
		return renderAdvise(dir, run.Summary)
	}
	return WriteFile(filepath.Join(dir, File), []*Run{run})
}

// view is what the template renders.
type view struct {
	Title string
	// Single is a page of one run: its section has no heading of its
	// own, the title being its label.
	Single  bool
	Runs    []runV
	Compare []compareV
	// HTTPCompare is set when every run is an HTTP fleet's: their
	// figures side by side instead of a WebSocket comparison.
	HTTPCompare []httpCompareV
	// SimError is a simulated run beside the real one it models, with
	// the simulator's error (SideBySide): set for two runs of
	// which one is simulated, as the terminal prints it.
	SimError *simErrorV
	// MixedBanner warns that simulated and real runs are compared; ""
	// when they are all of one kind.
	MixedBanner string
	// Busy names the runs taken on a busy machine, with why.
	Busy     []nameValue
	Data     template.JS
	UPlotJS  template.JS
	UPlotCSS template.CSS
	PageJS   template.JS
	// Live and LiveJS are the live page's panel and script; empty in
	// report.html.
	Live   template.HTML
	LiveJS template.JS
}

type nameValue struct{ Name, Value string }

type runV struct {
	Label, RunID, Dir, Duration string
	Seed                        uint64
	Clients, Processes          int
	Missing                     string
	SLO                         []summary.SLOResult
	Checks                      []summary.Check
	Pass                        bool
	Events                      []eventV
	Attempts, Successes         uint64
	Failures, Disconnects       []nameValue
	Stopped                     []nameValue
	Latency                     []latencyV
	Messages, Kernel            []nameValue
	Resources                   []resourceV
	// Machine is the machine's load while the run went
	// (results.MachineLoad.Text), and Busy whether it was busy; "" when
	// not sampled.
	Machine                 string
	Busy                    bool
	Simulated               bool
	AnyFailure, HasRTT      bool
	HasResume, HasMessages  bool
	HasResources, HasKernel bool
	// HTTP is an HTTP fleet's figures; nil for a WebSocket run, whose
	// plots and tables the page then shows instead.
	HTTP *httpV
}

type eventV struct {
	Name, Start, Ready, Outage, Back string
	R50, R90, R99, R100              string
	Peak, PeakToMean, Wasted         string
	OutageAttempts                   string
	// From is the instant the R figures count from, in words
	// (summary.Recovery.MeasuredFrom); Note the recovery's note, if any.
	From, Note string
	// Resub is the recovery to re-subscribed of a session protocol's
	// fleet, in words; empty without one.
	Resub string
	// GaveUp is how many clients gave up for good after the event (their
	// policy's attempts exhausted, the attempts_exhausted class) and how
	// many were still retrying at the end, in words; empty when none gave
	// up.
	GaveUp string
}

type latencyV struct {
	Name, P50, P90, P99, Max, Mean string
	Count                          int64
}

type resourceV struct {
	Role, RSS, CPU, FDs, Threads, Procs string
}

type compareV struct {
	Name, Policy, Event, Recovered, R50, R90, R99, R100 string
	Peak, PeakToMean, Wasted, Outage, Overflows         string
	ConnectP99, TTRP99, SLO                             string
}

func runView(r *Run) runV {
	s := r.Summary
	v := runV{
		Label: r.Label, RunID: s.RunID, Dir: r.Dir, Seed: s.Seed, Clients: s.Clients, Processes: s.Processes,
		Duration: strings.TrimSuffix(strings.TrimRight(f2(s.DurationS), "0"), ".") + " s", // 11.94 s, 12 s
		SLO:      s.SLO, Checks: s.Checks, Pass: s.Pass,
		Attempts: s.Connect.Attempts, Successes: s.Connect.Successes,
		Failures: nonZero(s.Connect.Failures), Disconnects: nonZero(s.Connect.Disconnects),
		HasRTT: s.LatencyMS.MessageRTT.Count > 0, HasResume: s.LatencyMS.Resume.Count > 0,
		HasMessages:  s.Messages.Sent > 0 || s.Messages.Delivered > 0,
		HasResources: r.Resources.Rows() > 0, HasKernel: r.Kernel.Rows() > 1,
	}
	v.AnyFailure = len(v.Failures) > 0
	v.Simulated = s.Simulated
	if m := s.Machine; m != nil {
		v.Machine, v.Busy = m.Text(), m.Busy
	}
	v.HTTP = httpView(s.HTTP)
	if len(r.Missing) > 0 {
		v.Missing = strings.Join(r.Missing, ", ")
	}
	for i := range s.Events {
		v.Events = append(v.Events, eventView(s, i))
	}
	stopped := make([]string, 0, len(s.Stopped))
	for k := range s.Stopped {
		stopped = append(stopped, k)
	}
	sort.Strings(stopped)
	for _, k := range stopped {
		st := s.Stopped[k]
		v.Stopped = append(v.Stopped, nameValue{k, fmt.Sprintf("%d: %s", st.Count, st.LastError)})
	}
	for _, l := range []struct {
		name string
		l    results.Latency
	}{{"connect", s.LatencyMS.Connect}, {"ttr", s.LatencyMS.TTR}, {"message_rtt", s.LatencyMS.MessageRTT},
		{"message_rtt_scheduled", s.LatencyMS.MessageRTTScheduled}, {"resume", s.LatencyMS.Resume}} {
		v.Latency = append(v.Latency, latencyOf(l.name, l.l))
	}
	m := s.Messages
	if v.HasMessages {
		for _, x := range []struct {
			n string
			v uint64
		}{{"sent", m.Sent}, {"acked", m.Acked}, {"retried", m.Retried}, {"delivered", m.Delivered},
			{"dup_suppressed", m.DupSuppressed}, {"dup_delivered", m.DupDelivered}, {"lost", m.Lost}, {"resumed", m.Resumed}} {
			v.Messages = append(v.Messages, nameValue{x.n, strconv.FormatUint(x.v, 10)})
		}
	}
	k := s.Kernel
	for _, x := range []struct {
		n string
		v int64
	}{{"ListenOverflows", k.ListenOverflows}, {"ListenDrops", k.ListenDrops}, {"TCPSynRetrans", k.TCPSynRetrans},
		{"TCPReqQFullDoCookies", k.TCPReqQFullDoCookies}, {"SyncookiesSent", k.SyncookiesSent},
		{"TCPAbortOnTimeout", k.TCPAbortOnTimeout}, {"AttemptFails", k.AttemptFails}, {"OutRsts", k.OutRsts}} {
		v.Kernel = append(v.Kernel, nameValue{x.n, strconv.FormatInt(x.v, 10)})
	}
	roles := make([]string, 0, len(s.Resources))
	for role := range s.Resources {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		rs := s.Resources[role]
		v.Resources = append(v.Resources, resourceV{Role: role, RSS: f2(float64(rs.PeakRSSBytes) / (1 << 20)), CPU: f2(rs.CPUSeconds),
			FDs: strconv.FormatInt(rs.PeakFDs, 10), Threads: strconv.FormatInt(rs.PeakThreads, 10), Procs: strconv.Itoa(rs.Processes)})
	}
	return v
}

// eventView is the i-th event of s with its recovery, as the page shows it.
func eventView(s *summary.Summary, i int) eventV {
	e := s.Events[i]
	ev := eventV{Name: summary.EventName(e), Start: f2(e.StartS), Ready: "never", Outage: FloatText(e.OutageS, 2)}
	if e.ReadyS != nil {
		ev.Ready = f2(*e.ReadyS)
	}
	if i < len(s.Recovery) {
		rec := s.Recovery[i]
		ev.Back = fmt.Sprintf("%d / %d", rec.Recovered, rec.ConnectedBefore)
		ev.R50, ev.R90, ev.R99, ev.R100 = secs(rec, rec.R50S), secs(rec, rec.R90S), secs(rec, rec.R99S), secs(rec, rec.R100S)
		ev.Peak = CountText(rec.HerdPeakPer100ms)
		ev.PeakToMean, ev.Wasted, ev.OutageAttempts = f2p(rec.HerdPeakToMean), f2p(rec.WastedAttemptsPerClient), f2p(rec.OutageAttemptsPerClient)
		ev.From, ev.Note = measuredFromText[rec.MeasuredFrom], rec.Note
		if x := rec.Resubscribed; x != nil {
			ev.Resub = fmt.Sprintf("%d / %d re-subscribed, R50 %s s, R90 %s s, R99 %s s, R100 %s s (to back: R99 %s s)", x.Recovered, x.SubscribedBefore,
				secs(rec, x.R50S), secs(rec, x.R90S), secs(rec, x.R99S), secs(rec, x.R100S), secs(rec, rec.R99S))
		}
		if rec.AttemptsExhausted > 0 {
			ev.GaveUp = fmt.Sprintf("%d of %d gave up (attempts exhausted), %d still retrying at the end",
				rec.AttemptsExhausted, rec.ConnectedBefore, rec.StillRetrying)
		}
	}
	return ev
}

func compareRow(r *Run) compareV {
	s := r.Summary
	policy := r.Policy
	if policy == "" {
		policy = "-"
	}
	c := compareV{Name: r.Name, Policy: policy, Event: "-", Recovered: "-", R50: "-", R90: "-", R99: "-", R100: "-",
		Peak: "-", PeakToMean: "-", Wasted: "-", Outage: "-",
		Overflows:  strconv.FormatInt(s.Kernel.ListenOverflows, 10),
		ConnectP99: latencyOf("", s.LatencyMS.Connect).P99, TTRP99: latencyOf("", s.LatencyMS.TTR).P99}
	if rec, ok := s.WorstRecovery(); ok {
		if rec.Event < len(s.Events) {
			c.Event = summary.EventName(s.Events[rec.Event])
		}
		c.Recovered = fmt.Sprintf("%d / %d", rec.Recovered, rec.ConnectedBefore)
		c.R50, c.R90, c.R99, c.R100 = secs(rec, rec.R50S), secs(rec, rec.R90S), secs(rec, rec.R99S), secs(rec, rec.R100S)
		c.Peak = CountText(rec.HerdPeakPer100ms)
		c.PeakToMean, c.Wasted, c.Outage = f2p(rec.HerdPeakToMean), f2p(rec.WastedAttemptsPerClient), f2p(rec.OutageAttemptsPerClient)
	}
	switch {
	case len(s.SLO) == 0:
		c.SLO = "-"
	case s.Pass:
		c.SLO = "pass"
	default:
		c.SLO = "FAIL"
	}
	return c
}

// nonZero lists a class map's non-zero entries, largest first.
func nonZero(m map[string]uint64) []nameValue {
	type kv struct {
		k string
		v uint64
	}
	var xs []kv
	for k, v := range m {
		if v > 0 {
			xs = append(xs, kv{k, v})
		}
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].v > xs[j].v || xs[i].v == xs[j].v && xs[i].k < xs[j].k })
	out := make([]nameValue, len(xs))
	for i, x := range xs {
		out[i] = nameValue{x.k, strconv.FormatUint(x.v, 10)}
	}
	return out
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// latencyOf is one row of a latency table: "-" for the figures of a
// distribution with nothing recorded, whose zeros are no latency.
func latencyOf(name string, l results.Latency) latencyV {
	if l.Count == 0 {
		return latencyV{Name: name, P50: "-", P90: "-", P99: "-", Max: "-", Mean: "-"}
	}
	return latencyV{Name: name, Count: l.Count, P50: f2(l.P50), P90: f2(l.P90), P99: f2(l.P99), Max: f2(l.Max), Mean: f2(l.Mean)}
}

// measuredFromText says in words what an event's R figures count from
// (summary.Recovery.MeasuredFrom).
var measuredFromText = map[string]string{
	summary.MeasuredReady:     "target ready",
	summary.MeasuredLastReady: "last process ready",
	summary.MeasuredEnd:       "fault's end",
	summary.MeasuredStart:     "event's start",
	summary.MeasuredNone:      "-",
}

type simErrorV struct {
	Real, Sim string // the runs' labels
	Figures   []SideFigure
}

// simError is the simulator's error table of two runs, one of them
// simulated; nil otherwise.
func simError(runs []*Run) *simErrorV {
	if len(runs) != 2 || runs[0].Summary.Simulated == runs[1].Summary.Simulated {
		return nil
	}
	real, sim := runs[0], runs[1]
	if real.Summary.Simulated {
		real, sim = sim, real
	}
	figs := SideBySide(summary.Row{Policy: real.Label, Summary: real.Summary}, summary.Row{Policy: sim.Label, Summary: sim.Summary})
	if figs == nil {
		return nil
	}
	return &simErrorV{Real: real.Name, Sim: sim.Name, Figures: figs}
}

// secs is an R figure of rec: "never" when not reached, "-" when not
// measured (RText).
func secs(rec summary.Recovery, p *float64) string { return RText(rec, p) }

// f2p is a nullable figure; null is "-".
func f2p(p *float64) string { return FloatText(p, 2) }

// simulatedCount is the number of simulated runs among runs.
func simulatedCount(runs []*Run) int {
	n := 0
	for _, r := range runs {
		if r.Summary != nil && r.Summary.Simulated {
			n++
		}
	}
	return n
}

// MixedBanner is the line that must head a comparison of simulated runs
// with real ones, so that no figure of a model is read as a measurement
// beside one; "" when runs are all simulated or all real.
func MixedBanner(runs []*Run) string {
	var sim, real []string
	for _, r := range runs {
		if r.Summary != nil && r.Summary.Simulated {
			sim = append(sim, r.Name)
		} else {
			real = append(real, r.Name)
		}
	}
	if len(sim) == 0 || len(real) == 0 {
		return ""
	}
	return fmt.Sprintf("simulated and real runs compared: %s simulated (a model's figures, no sockets), %s measured; "+
		"the simulator is trusted as far as its calibration goes (docs/simulator.md)", strings.Join(sim, ", "), strings.Join(real, ", "))
}
