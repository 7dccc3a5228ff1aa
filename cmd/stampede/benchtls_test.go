package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		t.Errorf("reconnects: in memory %d/%d, kept %d/%d, ecdsa %s %d/%d (full/resumed)\nstdout:\n%s\nstderr:\n%s",
			mem.Full, mem.Resumed, kept.Full, kept.Resumed, ec.CertKind, ec.Full, ec.Resumed, stdout, stderr)
	}
	if kept.Target == nil || kept.Target.ResumedCPUUs == nil || ec.Target == nil || ec.Target.FullCPUUs == nil {
		t.Errorf("the target's handshakes: kept %+v, ecdsa %+v", kept.Target, ec.Target)
	}
}
