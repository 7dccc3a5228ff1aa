package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/resultstest"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/storm"
)

// TestBenchTLS: bench --tls runs the storm three ways through an abrupt
// restart: RSA-2048 with the ticket keys in memory (every reconnect
// full), the same with them kept in a file (every reconnect resumed),
// ECDSA P-256; and prints crypto/tls's cost beside the target's. The
// restart comes at 4 s: 40 full RSA handshakes take a quarter of a
// second of CPU, and a CI machine running other tests beside this one
// has left a run a tenth of it, so that a restart at 2 s found one
// client connected and nothing to resume. The run lasts 10 s: on such a
// machine one case counted no handshake at all after a restart at 4 s
// in a run of 7 s.
func TestBenchTLS(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runStampedeWithin(t, 4*contractTimeout, "bench", "--tls", "--policy", "fixed:initial=300ms", "--clients", "40",
		"--chaos", "at 4s restart abrupt down=300ms", "--duration", "10s", "--out", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"rsa-2048, keys in memory", "rsa-2048, keys kept", "ecdsa-p256, keys in memory",
		"target full:resumed handshake CPU", "Go crypto/tls server CPU per handshake", "ecdsa-p256 against rsa-2048"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, storm.TLSBenchFile))
	if err != nil {
		t.Fatal(err)
	}
	var tb storm.TLSBench
	if err := json.Unmarshal(b, &tb); err != nil {
		t.Fatal(err)
	}
	if len(tb.Cases) != 3 || len(tb.Cost) != 2 {
		t.Fatalf("%d cases, %d costs:\n%s", len(tb.Cases), len(tb.Cost), b)
	}
	mem, kept, ec := tb.Cases[0], tb.Cases[1], tb.Cases[2]
	if mem.Full != 40 || mem.Resumed != 0 || kept.Resumed < 36 || ec.CertKind != "ecdsa-p256" || ec.Full != 40 {
		t.Errorf("reconnects: in memory %d/%d, kept %d/%d, ecdsa %s %d/%d (full/resumed)\n%s\nstdout:\n%s\nstderr:\n%s",
			mem.Full, mem.Resumed, kept.Full, kept.Resumed, ec.CertKind, ec.Full, ec.Resumed, benchCases(t, out), stdout, stderr)
	}
	if kept.Target == nil || kept.Target.ResumedCPUUs == nil || ec.Target == nil || ec.Target.FullCPUUs == nil {
		t.Errorf("the target's handshakes: kept %+v, ecdsa %+v", kept.Target, ec.Target)
	}
}

// benchCases says, for a failure's message, how each run of the bench in
// out went: its restart (when the target was started again and when it
// was ready, and why the attempts failed) and its recovery.
func benchCases(t *testing.T, out string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "*", folder.SummaryFile))
	sort.Strings(dirs)
	var b strings.Builder
	for _, f := range dirs {
		s, err := folder.ReadSummary(f)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", f, err)
			continue
		}
		fmt.Fprintf(&b, "%s: complete %v\n", filepath.Base(filepath.Dir(f)), s.Complete)
		for _, e := range s.Events {
			fmt.Fprintf(&b, "  event %s %s at %.3f s, started again at %.3f s, ready at %s, failures %v, disconnects %v\n",
				e.Kind, e.Mode, e.StartS, e.EndS, resultstest.Seconds(e.ReadyS), summary.NonZero(e.Failures), summary.NonZero(e.Disconnects))
		}
		for _, r := range s.Recovery {
			fmt.Fprintf(&b, "  recovery: %d of %d back, %d still retrying, R99 %s\n",
				r.Recovered, r.Disconnected, r.StillRetrying, resultstest.Seconds(r.R99S))
		}
	}
	return b.String()
}
