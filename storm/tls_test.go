package storm_test

import (
	"path/filepath"
	"testing"

	"github.com/stampede-dev/stampede/results"
)

// TestTLSHandshakesInSummary: a wss:// storm through an abrupt restart,
// its ticket keys in a file kept across it: summary.json counts the
// target's handshakes, every process it had (the one killed too), full
// for the first connects and resumed for the reconnects, with their CPU.
func TestTLSHandshakesInSummary(t *testing.T) {
	cfg := stormConfig(t, "at 2500ms restart abrupt down=300ms")
	cfg.Target.Server.TLSTicketKeys = filepath.Join(t.TempDir(), "ticket.keys")
	sum := runStorm(t, cfg).Summary
	oneRecovery(t, sum)
	h, ok := sum.TLSHandshakes[results.RoleTarget]
	if !ok {
		t.Fatalf("tls_handshakes %v: no target", sum.TLSHandshakes)
	}
	c := sum.Connect
	t.Logf("target %+v; fleet: %d full, %d resumed", h, c.TLSFull, c.TLSResumed)
	if h.Full < testClients || h.Resumed < c.TLSResumed || c.TLSResumed < testClients*9/10 {
		t.Errorf("target: %d full, %d resumed; fleet resumed %d; want >= %d full and the fleet's resumed, >= 90 %% of %d",
			h.Full, h.Resumed, c.TLSResumed, testClients, testClients)
	}
	if h.FullCPUUs == nil || h.ResumedCPUUs == nil || *h.FullCPUUs <= 0 || *h.ResumedCPUUs <= 0 {
		t.Errorf("CPU per handshake: full %v, resumed %v", h.FullCPUUs, h.ResumedCPUUs)
	}
}
