package redisstore

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// TestWaitAOFRefusedBefore72 opens the machine's Redis (127.0.0.1:6379)
// with wait-aof=1: a Redis older than 7.2 has no WAITAOF, so no ACK could
// be fsync-backed, and Open refuses in one line naming the version it
// found. On 7.2 or later TestWaitAOF runs the conformance suite instead.
func TestWaitAOFRefusedBefore72(t *testing.T) {
	storetest.RequireService(t, "Redis", storetest.RedisAddr)
	info, err := command(storetest.RedisAddr, "INFO server")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := versionOf(info)
	if !ok {
		t.Fatalf("no redis_version in INFO server:\n%s", info)
	}
	if atLeast(v, 7, 2) {
		t.Skipf("Redis %s has WAITAOF: TestWaitAOF covers wait-aof=1", v)
	}
	_, err = Open(context.Background(), mustURL(t, storetest.RedisURL+"?wait-aof=1"), store.Options{})
	if err == nil || !strings.Contains(err.Error(), "Redis 7.2 or later; this server runs Redis "+v) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open with wait-aof=1 on Redis %s = %v; want one line naming 7.2 and %s", v, err, v)
	}
	t.Logf("refused: %v", err)
}

// TestAtLeast: the version comparison Open's refusal rests on.
func TestAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"7.0.15", false}, {"6.2.14", false}, {"7.2.0", true}, {"7.4.1", true},
		{"8.0.0", true}, {"10.1", true}, {"garbage", true}, {"7.x", true},
	} {
		if got := atLeast(tc.v, 7, 2); got != tc.want {
			t.Errorf("atLeast(%q, 7, 2) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestDupAppendWrites: a resend answered as a dup makes a write in the
// append script (a SET that changes nothing), watched with MONITOR.
// WAITAOF waits only for its own connection's writes: without one, a
// dup's WAITAOF would return at once, though the first copy's writer may
// have died before its own WAITAOF, leaving the message unsynced.
func TestDupAppendWrites(t *testing.T) {
	addr := startRedis(t, redisServer(t), "--appendonly", "no")
	s, err := Open(context.Background(), mustURL(t, "redis://"+addr+"/0?prefix=d:"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Append(ctx, "r", "m1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	mon, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	mon.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(mon)
	mon.Write([]byte("MONITOR\r\n"))
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "+OK") {
		t.Fatalf("MONITOR = %q, %v", l, err)
	}
	if seq, dup, err := s.Append(ctx, "r", "m1", []byte("x")); err != nil || seq != 1 || !dup {
		t.Fatalf("resend = %d %v %v, want 1, dup", seq, dup, err)
	}
	s.c.Echo(ctx, "end-of-dup")
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v after %q", err, lines)
		}
		if strings.Contains(l, "end-of-dup") {
			break
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	for _, l := range lines {
		if strings.Contains(l, `lua] "SET" "d:{r}:id:m1"`) {
			return
		}
	}
	t.Fatalf("the dup's script wrote nothing; MONITOR saw:\n%s", strings.Join(lines, "\n"))
}
