package calibration

import (
	"bytes"
	"strings"
	"testing"
)

// read is how the product reads each figure of the embedded file: by its
// name, as a duration, a list of durations, an integer or a number.
var read = map[string]func(File, string) error{
	"sim.cpu.attempt":            duration,
	"sim.cpu.upgrade":            duration,
	"sim.cpu.disconnect":         duration,
	"sim.cpu.accept":             duration,
	"sim.cpu.close":              duration,
	"sim.cpu.segment":            duration,
	"sim.cpu.ping":               duration,
	"sim.cpu.slice":              duration,
	"sim.cpu.loadgen_share":      number,
	"sim.cpu.loadgen_growth":     number,
	"sim.cpu.target_growth":      number,
	"sim.max_calibrated_clients": integer,
	"sim.proc_capacity":          number,
	"sim.stop_time":              duration,
	"sim.start_time":             duration,
	"sim.close_rate":             number,
	"sim.syn_give_up":            durations,
	"worker.gc_percent":          integer,
}

func init() {
	for _, kind := range []string{"ecdsa-p256", "rsa-2048", "rsa-4096"} {
		for _, f := range []string{"full", "resumed", "client_full", "client_resumed"} {
			read["sim.tls."+kind+"."+f] = duration
		}
	}
}

func duration(f File, n string) error  { _, err := f.Duration(n); return err }
func durations(f File, n string) error { _, err := f.Durations(n); return err }
func number(f File, n string) error    { _, err := f.Float(n); return err }
func integer(f File, n string) error   { _, err := f.Int(n); return err }

// TestEmbedded holds the embedded file to what the product reads: every
// figure it reads is there and parses, and no figure is there unread.
func TestEmbedded(t *testing.T) {
	for name, get := range read {
		if err := get(Embedded, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, g := range Embedded.Figures {
		if read[g.Name] == nil {
			t.Errorf("%s: in calibration.json, read by nothing", g.Name)
		}
	}
}

// TestMarshalRoundTrip: the file lab writes is the file the product
// embeds, byte for byte, so a rewrite with no new figure changes nothing.
func TestMarshalRoundTrip(t *testing.T) {
	b, err := Embedded.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, embedded) {
		t.Errorf("Marshal(Embedded) differs from calibration.json:\n%s", b)
	}
}

func TestSet(t *testing.T) {
	f, _ := Parse(embedded)
	n := len(f.Figures)
	g, _ := f.Lookup("sim.cpu.attempt")
	g.Value = "30µs"
	f.Set(g)
	if d, _ := f.Duration("sim.cpu.attempt"); d.String() != "30µs" || len(f.Figures) != n {
		t.Errorf("Set of a figure there: attempt %v, %d figures, want 30µs and %d", d, len(f.Figures), n)
	}
	if d, _ := Embedded.Duration("sim.cpu.attempt"); d.String() == "30µs" {
		t.Error("Set on a parsed copy changed Embedded")
	}
	g.Name = "sim.cpu.new"
	f.Set(g)
	if len(f.Figures) != n+1 || f.Figures[n].Name != "sim.cpu.new" {
		t.Errorf("Set of a new figure: %d figures, last %q", len(f.Figures), f.Figures[len(f.Figures)-1].Name)
	}
}

func TestParseRefuses(t *testing.T) {
	src := `{"command": "c", "date": "2026-12-02", "machine": {"kind": "k", "cores": 2, "kernel": "6.18"}}`
	for _, c := range []struct{ name, json, want string }{
		// Every figure says where it came from.
		{"no command", `{"figures": [{"name": "a", "value": "1", "source": {"date": "2026-12-02", "machine": {"kind": "k", "cores": 2, "kernel": "6.18"}}}]}`, "Source.Command"},
		// A date is a day.
		{"bad date", `{"figures": [{"name": "a", "value": "1", "source": {"command": "c", "date": "yesterday", "machine": {"kind": "k", "cores": 2, "kernel": "6.18"}}}]}`, "Source.Date"},
		// The machine has its cores.
		{"no cores", `{"figures": [{"name": "a", "value": "1", "source": {"command": "c", "date": "2026-12-02", "machine": {"kind": "k", "kernel": "6.18"}}}]}`, "Source.Machine"},
		// A name once.
		{"twice", `{"figures": [{"name": "a", "value": "1", "source": ` + src + `}, {"name": "a", "value": "2", "source": ` + src + `}]}`, "twice"},
		// A field the file does not have is a typo.
		{"unknown field", `{"figures": [], "extra": 1}`, "unknown field"},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %s", c.name, err, c.want)
		}
	}
}
