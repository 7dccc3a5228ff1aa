package mitigation

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/spec"
)

func TestApply(t *testing.T) {
	sched, err := chaos.Parse("at 8s restart abrupt down=2s; at 20s stall 1s")
	if err != nil {
		t.Fatal(err)
	}
	srv := spec.Server{AcceptRate: 2000, Backlog: 128}
	want := map[string]string{
		None:      "at 8s restart graceful down=2s; at 20s stall 1s",
		AdmitRamp: "at 8s restart graceful down=2s; at 20s stall 1s",
		Shed:      "at 8s restart graceful down=2s; at 20s stall 1s",
		Spread:    "at 8s restart graceful down=2s spread=5s; at 20s stall 1s",
		Hint:      "at 8s restart graceful down=2s hint=5s; at 20s stall 1s",
	}
	for _, m := range All(Window(10000, 2000)) {
		s, sc := m.Apply(srv, sched)
		if got := sc.String(); got != want[m.Kind] {
			t.Errorf("%s: schedule %q, want %q", m, got, want[m.Kind])
		}
		if _, err := chaos.Parse(sc.String()); err != nil {
			t.Errorf("%s: the schedule does not parse back: %v", m, err)
		}
		if (s.AdmitRamp > 0) != (m.Kind == AdmitRamp) || (s.Shed > 0) != (m.Kind == Shed) {
			t.Errorf("%s: server %+v", m, s)
		}
		if err := m.Check(srv); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	if sched.Entries[0].Event.Mode != chaos.ModeAbrupt {
		t.Error("Apply changed its input schedule")
	}
	if err := (Mitigation{Kind: Shed, Window: 5 * time.Second}).Check(spec.Server{}); err == nil || !strings.Contains(err.Error(), "AcceptRate") {
		t.Errorf("shed without an accept rate: %v", err)
	}
	if err := (Mitigation{Kind: "pray", Window: time.Second}).Check(srv); err == nil {
		t.Error("an unknown kind passed")
	}
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		clients int
		rate    float64
		want    time.Duration
	}{{10000, 2000, 5 * time.Second}, {10001, 2000, 6 * time.Second}, {10, 2000, time.Second}, {10, 0, time.Second}} {
		if got := Window(tc.clients, tc.rate); got != tc.want {
			t.Errorf("Window(%d, %g) = %v, want %v", tc.clients, tc.rate, got, tc.want)
		}
	}
	if got := (Mitigation{Kind: Shed, Window: 5 * time.Second}).String(); got != "shed=5s" {
		t.Errorf("String = %q", got)
	}
}

// The TLS kinds change a wss:// server's ticket keys or certificate and
// nothing else, and only a wss:// server has them.
func TestTLSKinds(t *testing.T) {
	srv := spec.Server{TLSCertKind: "rsa-2048", AcceptRate: 2000}
	ms := TLS(srv, "ticket.keys")
	if len(ms) != 2 || ms[0].String() != TicketsKept || ms[1].String() != ECDSA {
		t.Fatalf("TLS: %v", ms)
	}
	kept, _ := ms[0].Apply(srv, nil)
	ec, _ := ms[1].Apply(srv, nil)
	if kept.TLSTicketKeys != "ticket.keys" || kept.TLSCertKind != "rsa-2048" || ec.TLSCertKind != "ecdsa-p256" || ec.TLSTicketKeys != "" {
		t.Errorf("tickets-kept %+v; ecdsa %+v", kept, ec)
	}
	for _, m := range ms {
		if err := m.Check(srv); err != nil {
			t.Errorf("%s: %v", m, err)
		}
		if err := m.Check(spec.Server{}); err == nil {
			t.Errorf("%s passed for a ws:// server", m)
		}
	}
	if got := TLS(spec.Server{}, "k"); got != nil {
		t.Errorf("ws://: %v", got)
	}
	if got := TLS(spec.Server{TLS: true, TLSTicketKeys: "k"}, "k"); len(got) != 0 {
		t.Errorf("ECDSA with keys kept already: %v", got)
	}
	if err := (Mitigation{Kind: TicketsKept}).Check(srv); err == nil {
		t.Error("tickets-kept without a key file passed")
	}
}
