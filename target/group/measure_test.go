package group

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// procStatus returns one field of /proc/PID/status, e.g. "VmRSS".
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestMeasureMemoryPerConn measures what an idle connection costs a target
// process (RSS per connection, threads), for plain and TLS connections.
// It is a measurement, not a check: run it with
//
//	STAMPEDE_MEASURE=1 go test -run MeasureMemory -v ./target/group/
func TestMeasureMemoryPerConn(t *testing.T) {
	if os.Getenv("STAMPEDE_MEASURE") == "" {
		t.Skip("a measurement; set STAMPEDE_MEASURE=1 to run it")
	}
	const n = 5000
	for _, tlsOn := range []bool{false, true} {
		g := startGroup(t, 1, target.Config{Server: spec.Server{Backlog: 1024, TLS: tlsOn}})
		pid := g.Procs()[0].PID
		rss := func() int { kb, _ := strconv.Atoi(strings.Fields(procStatus(pid, "VmRSS") + " 0")[0]); return kb }
		before := rss()
		start := time.Now()
		conns := make([]net.Conn, 0, n)
		for range n {
			r := dialWS(g.URL(), "")
			if r.err != nil {
				t.Fatal(r.err)
			}
			conns = append(conns, r.conn)
		}
		dial := time.Since(start)
		for _, c := range conns { // one message each, so read buffers were used once
			wsutil.WriteClientText(c, []byte("hello"))
		}
		for _, c := range conns {
			wsutil.ReadServerText(c)
		}
		time.Sleep(500 * time.Millisecond)
		after := rss()
		st, _ := g.Stats(context.Background())
		t.Logf("tls=%v: %d idle connections (dialled in %v): target RSS %d -> %d KB, %.1f KB per connection, %s threads; %d conns open",
			tlsOn, n, dial.Round(time.Millisecond), before, after, float64(after-before)/n, procStatus(pid, "Threads"), st.Conns)
		for _, c := range conns {
			c.Close()
		}
		g.Close()
	}
}
