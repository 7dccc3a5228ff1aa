package storm

import (
	"encoding/json"
	"testing"

	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/target"
)

// TestConfigSettings: a run given Settings records them in summary.json's
// config, in their own order and spelling, with the sizing it chose
// added; without them, the redacted Config.
func TestConfigSettings(t *testing.T) {
	sz := Sizing{LoadgenProcs: 2, TargetProcs: 3, PerProcess: 15000, PerSourceIP: 20000}
	cfg := Config{Settings: json.RawMessage(`{"clients":20,"header":["Authorization: <redacted>"]}`)}
	got := summary.Summarize(summary.Input{Config: cfg.summaryConfig(sz, target.Config{})}).Config
	want := `{"clients":20,"header":["Authorization: <redacted>"],"sizing":{"loadgen_procs":2,"target_procs":3,"per_process":15000,"per_source_ip":20000,"memory_bytes":0}}`
	if string(got) != want {
		t.Errorf("config %s\nwant   %s", got, want)
	}
	got = summary.Summarize(summary.Input{Config: Config{Duration: 5e9}.summaryConfig(sz, target.Config{})}).Config
	var plain struct {
		Duration int64  `json:"duration"`
		Sizing   Sizing `json:"sizing"`
	}
	if err := json.Unmarshal(got, &plain); err != nil || plain.Duration != 5e9 || plain.Sizing.TargetProcs != 3 {
		t.Errorf("config without Settings %s (%v)", got, err)
	}
}
