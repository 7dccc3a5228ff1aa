package hoststat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/results"
)

// readFixture parses testdata files into one KernelCounters, as
// KernelSnapshot does with the two /proc files.
func readFixture(t *testing.T, names ...string) KernelCounters {
	t.Helper()
	c := KernelCounters{}
	for _, n := range names {
		f, err := os.Open(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		err = ParseKernelCounters(f, c)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	return c
}

func TestParseKernelCountersFullFiles(t *testing.T) {
	// Verbatim copies of kernel 6.18's files: 229 netstat and 83 snmp names.
	c := readFixture(t, "netstat.kernel-6.18", "snmp.kernel-6.18")
	if len(c) != 229+83 {
		t.Errorf("parsed %d counters, want %d", len(c), 229+83)
	}
	for name, want := range map[string]int64{
		"TcpExt.ListenOverflows": 0,
		"IpExt.InOctets":         145955276,
		"Tcp.MaxConn":            -1, // the one signed value
		"Tcp.ActiveOpens":        90,
		"Tcp.AttemptFails":       11,
		"Udp.InDatagrams":        45,
	} {
		got, ok := c[name]
		if !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", name, got, ok, want)
		}
	}
}

func TestKernelDelta(t *testing.T) {
	before := readFixture(t, "netstat.before", "snmp.before")
	after := readFixture(t, "netstat.after", "snmp.after")
	got := Delta(before, after)
	want := results.KernelDelta{
		ListenOverflows:      349 - 100, // 83 SYNs x 3 sends, as in FIELD-NOTES
		ListenDrops:          369 - 120,
		TCPSynRetrans:        256 - 7,
		TCPReqQFullDoCookies: 15 - 3,
		SyncookiesSent:       15 - 3,
		SyncookiesRecv:       9 - 2,
		SyncookiesFailed:     1,
		TCPTimeouts:          290 - 40,
		ActiveOpens:          190 - 90,
		PassiveOpens:         67 - 50,
		AttemptFails:         94 - 11,
		EstabResets:          10 - 9,
		RetransSegs:          249,
		OutRsts:              104 - 21,
		// TCPReqQFullDrop unchanged; TCPAbortOnTimeout and TCPBacklogDrop
		// absent from the fixture: 0.
	}
	if got != want {
		t.Errorf("Delta =\n%+v\nwant\n%+v", got, want)
	}
	if d := after.Since(before); d["Tcp.CurrEstab"] != 17 || d["Tcp.MaxConn"] != 0 {
		t.Errorf("Since: CurrEstab %d MaxConn %d, want 17 0", d["Tcp.CurrEstab"], d["Tcp.MaxConn"])
	}
}

func TestParseKernelCountersErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"count mismatch", "Tcp: A B\nTcp: 1\n", "Tcp has 2 names but 1 values"},
		{"prefix mismatch", "Tcp: A\nUdp: 1\n", `values "Udp:" do not follow header "Tcp:"`},
		{"not a number", "Tcp: A\nTcp: x\n", "Tcp.A"},
		{"header without values", "Tcp: A\nTcp: 1\nUdp: B\n", `header "Udp:" has no values`},
		{"no colon", "Tcp A\nTcp 1\n", "do not follow header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ParseKernelCounters(strings.NewReader(tc.in), KernelCounters{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseKernelCountersUnsignedMax(t *testing.T) {
	// An unsigned long past MaxInt64 wraps rather than failing the run.
	c := KernelCounters{}
	if err := ParseKernelCounters(strings.NewReader("TcpExt: A\nTcpExt: 18446744073709551615\n"), c); err != nil {
		t.Fatal(err)
	}
	if c["TcpExt.A"] != -1 {
		t.Errorf("A = %d, want -1 (wrapped)", c["TcpExt.A"])
	}
}

func TestKernelSnapshotLive(t *testing.T) {
	c, err := KernelSnapshot()
	if err != nil {
		testenv.SkipUnlessRequired(t, "no /proc/net here: %v", err)
	}
	for _, name := range []string{"TcpExt.ListenOverflows", "TcpExt.ListenDrops", "Tcp.ActiveOpens", "Tcp.RetransSegs"} {
		if _, ok := c[name]; !ok {
			t.Errorf("live snapshot lacks %s", name)
		}
	}
	d := Delta(c, c)
	if d != (results.KernelDelta{}) {
		t.Errorf("Delta of a snapshot with itself = %+v, want zero", d)
	}
}

func FuzzParseKernelCounters(f *testing.F) {
	f.Add("TcpExt: A B\nTcpExt: 1 2\n")
	f.Add("Tcp: A\nTcp: -1\n\n")
	f.Add("Tcp:\nTcp:\n")
	f.Fuzz(func(t *testing.T, in string) {
		c := KernelCounters{}
		if err := ParseKernelCounters(strings.NewReader(in), c); err != nil {
			return
		}
		for k := range c {
			if !strings.Contains(k, ".") {
				t.Errorf("key %q has no prefix", k)
			}
		}
	})
}
