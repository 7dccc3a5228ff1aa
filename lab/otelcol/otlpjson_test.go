package otelcol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The file exporter writes one OTLP JSON request a line
// (ExportMetricsServiceRequest); these are the parts the test reads.
type (
	request struct {
		ResourceMetrics []struct {
			Resource struct {
				Attributes []keyValue `json:"attributes"`
			} `json:"resource"`
			ScopeMetrics []struct {
				Metrics []otlpMetric `json:"metrics"`
			} `json:"scopeMetrics"`
		} `json:"resourceMetrics"`
	}
	keyValue struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	}
	otlpMetric struct {
		Name  string `json:"name"`
		Unit  string `json:"unit"`
		Gauge *struct {
			DataPoints []dataPoint `json:"dataPoints"`
		} `json:"gauge"`
		Sum *struct {
			DataPoints  []dataPoint `json:"dataPoints"`
			IsMonotonic bool        `json:"isMonotonic"`
		} `json:"sum"`
	}
	dataPoint struct {
		Attributes []keyValue      `json:"attributes"`
		AsInt      json.RawMessage `json:"asInt"`
		AsDouble   json.RawMessage `json:"asDouble"`
	}
)

// value is a data point's number: OTLP JSON writes an int64 as a string.
func (d dataPoint) value() float64 {
	raw := d.AsDouble
	if len(raw) == 0 {
		raw = d.AsInt
	}
	f, _ := strconv.ParseFloat(strings.Trim(string(raw), `"`), 64)
	return f
}

// series names one data point's series: the metric and its attributes.
func series(name string, attrs []keyValue) string {
	parts := []string{name}
	for _, kv := range attrs {
		parts = append(parts, kv.Key+"="+kv.Value.StringValue)
	}
	sort.Strings(parts[1:])
	return strings.Join(parts, ",")
}

// received is what arrived for one run: its resource attributes, every
// metric's unit and kind, and each series' latest value.
type received struct {
	resource  map[string]string
	units     map[string]string
	monotonic map[string]bool
	last      map[string]float64
}

// parse reads the file exporter's output for the run runID; later
// exports overwrite earlier values.
func parse(b []byte, runID string) (*received, error) {
	got := &received{resource: map[string]string{}, units: map[string]string{}, monotonic: map[string]bool{}, last: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, err
		}
		for _, rm := range req.ResourceMetrics {
			res := map[string]string{}
			for _, kv := range rm.Resource.Attributes {
				res[kv.Key] = kv.Value.StringValue
			}
			if res["stampede.run.id"] != runID {
				continue
			}
			got.resource = res
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					got.units[m.Name] = m.Unit
					var dps []dataPoint
					switch {
					case m.Sum != nil:
						dps, got.monotonic[m.Name] = m.Sum.DataPoints, m.Sum.IsMonotonic
					case m.Gauge != nil:
						dps = m.Gauge.DataPoints
					}
					for _, dp := range dps {
						got.last[series(m.Name, dp.Attributes)] = dp.value()
					}
				}
			}
		}
	}
	return got, sc.Err()
}

// waitFinal waits for the run's final export (the only one that carries
// the herd's peak, known once the run is summarised) to be written, and
// returns what arrived.
func waitFinal(t *testing.T, ctx context.Context, path, runID string, log *bytes.Buffer) *received {
	t.Helper()
	for {
		b, _ := os.ReadFile(path)
		got, err := parse(b, runID)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if _, ok := got.units["stampede.recovery.herd_peak"]; ok {
			time.Sleep(500 * time.Millisecond) // a few flushes more: nothing may follow
			b, _ = os.ReadFile(path)
			got, err = parse(b, runID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if ctx.Err() != nil {
			t.Fatalf("the run's final export never reached the file exporter; collector:\n%s", log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func checkResource(t *testing.T, res map[string]string, runID string) {
	t.Helper()
	host, _ := os.Hostname()
	want := map[string]string{"service.name": "stampede", "stampede.run.id": runID, "stampede.role": "coordinator", "host.name": host}
	for k, v := range want {
		if res[k] != v {
			t.Errorf("resource attribute %s = %q, want %q", k, res[k], v)
		}
	}
	if res["stampede.agent"] == "" {
		t.Error("no resource attribute stampede.agent")
	}
}

func checkNames(t *testing.T, got *received) {
	t.Helper()
	for name, unit := range metricUnits {
		u, ok := got.units[name]
		switch {
		case !ok:
			t.Errorf("%s never arrived", name)
		case u != unit:
			t.Errorf("%s: unit %q, want %q", name, u, unit)
		case got.monotonic[name] != slices.Contains(counters, name):
			t.Errorf("%s: monotonic sum %v, want %v", name, got.monotonic[name], !got.monotonic[name])
		}
	}
	for name := range got.units {
		if _, ok := metricUnits[name]; !ok {
			t.Errorf("%s arrived but the test does not know it: add it to metricUnits", name)
		}
	}
}

// summary is the part of summary.json the final export must match.
type summary struct {
	RunID   string `json:"run_id"`
	Clients int    `json:"clients"`
	Connect struct {
		Attempts    float64            `json:"attempts"`
		Successes   float64            `json:"successes"`
		Failures    map[string]float64 `json:"failures"`
		Disconnects map[string]float64 `json:"disconnects"`
	} `json:"connect"`
	Stopped  map[string]float64 `json:"stopped"`
	Messages struct {
		Sent, Acked, Delivered float64
	} `json:"messages"`
	Recovery []struct {
		Event    int      `json:"event"`
		R50      *float64 `json:"r50_s"`
		R90      *float64 `json:"r90_s"`
		R99      *float64 `json:"r99_s"`
		R100     *float64 `json:"r100_s"`
		HerdPeak *float64 `json:"herd_peak_per_100ms"`
	} `json:"recovery"`
	Events []struct {
		Spec string `json:"spec"`
	} `json:"events"`
	Resources map[string]struct {
		CPU     float64 `json:"cpu_s"`
		PeakRSS float64 `json:"peak_rss_bytes"`
		PeakFDs float64 `json:"peak_fds"`
	} `json:"resources"`
}

func readSummary(t *testing.T, dir string) summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Recovery) == 0 || s.Connect.Attempts == 0 {
		t.Fatalf("the run recovered from no event or made no attempt: %s", b)
	}
	return s
}

// checkFinal compares the last exported value of every series with
// summary.json.
func checkFinal(t *testing.T, got *received, sum summary) {
	t.Helper()
	host, _ := os.Hostname()
	want := map[string]float64{
		"stampede.fleet.size":         float64(sum.Clients),
		"stampede.connect.attempts":   sum.Connect.Attempts,
		"stampede.connect.successes":  sum.Connect.Successes,
		"stampede.messages.sent":      sum.Messages.Sent,
		"stampede.messages.acked":     sum.Messages.Acked,
		"stampede.messages.delivered": sum.Messages.Delivered,
	}
	for class, n := range sum.Connect.Failures {
		want[series("stampede.connect.failures", attr("error.type", class))] = n
		want[series("stampede.disconnects", attr("error.type", class))] = sum.Connect.Disconnects[class]
		want[series("stampede.clients.stopped", attr("error.type", class))] = sum.Stopped[class]
	}
	for _, r := range sum.Recovery {
		ev := attr("stampede.event.index", strconv.Itoa(r.Event), "stampede.event.spec", sum.Events[r.Event].Spec)
		for name, v := range map[string]*float64{"r50": r.R50, "r90": r.R90, "r99": r.R99, "r100": r.R100, "herd_peak": r.HerdPeak} {
			if v != nil {
				want[series("stampede.recovery."+name, ev)] = *v
			}
		}
	}
	for role, r := range sum.Resources {
		rh := attr("stampede.role", role, "stampede.host", host)
		want[series("process.cpu.time", rh)] = r.CPU
		if v := got.last[series("process.memory.usage", rh)]; v <= 0 || v > r.PeakRSS {
			t.Errorf("%s: RSS %g, want in (0, the peak %g]", role, v, r.PeakRSS)
		}
		if v := got.last[series("process.unix.file_descriptor.count", rh)]; v <= 0 || v > r.PeakFDs {
			t.Errorf("%s: open files %g, want in (0, the peak %g]", role, v, r.PeakFDs)
		}
	}
	for s, w := range want {
		if !strings.Contains(s, ",") {
			s = series(s, nil)
		}
		v, ok := got.last[s]
		switch {
		case !ok:
			t.Errorf("%s: no final value", s)
		case math.Abs(v-w) > 1e-9*math.Max(1, math.Abs(w)):
			t.Errorf("%s: final value %g, summary.json says %g", s, v, w)
		}
	}
	t.Logf("%d series of %d metrics arrived; %d final values equal summary.json's", len(got.last), len(got.units), len(want))
}

func attr(kv ...string) []keyValue {
	var out []keyValue
	for i := 0; i+1 < len(kv); i += 2 {
		var a keyValue
		a.Key, a.Value.StringValue = kv[i], kv[i+1]
		out = append(out, a)
	}
	return out
}
