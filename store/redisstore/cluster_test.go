package redisstore

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// opener returns a storetest.Fresh that opens rawURL (which has a query)
// under a new prefix per test.
func opener(rawURL string) storetest.Fresh {
	return func(t *testing.T) storetest.Opener {
		prefix := storetest.RandomName(t) + ":"
		return func(t *testing.T, opt store.Options) store.Store {
			s, err := store.Open(storetest.Context(t), rawURL+"&prefix="+url.QueryEscape(prefix), opt)
			if err != nil {
				t.Fatalf("Open %s: %v", rawURL, err)
			}
			return s
		}
	}
}

// TestClusterConformance runs the conformance suite on a three-node Redis
// Cluster this test starts from the redis-server package: the append
// script names every key in KEYS and a room's keys share one slot, so it
// runs on whichever node holds the room.
func TestClusterConformance(t *testing.T) {
	addrs := startCluster(t)
	raw := "redis://" + addrs[0] + "/0?cluster=1&addr=" + addrs[1] + "&addr=" + addrs[2]
	storetest.Run(t, opener(raw))

	// Rooms spread over the nodes: each node got some.
	s, err := Open(context.Background(), mustURL(t, raw+"&prefix=spread:"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 30 {
		if _, _, err := s.Append(context.Background(), "room"+strconv.Itoa(i), "m", []byte("x")); err != nil {
			t.Fatalf("append to room%d: %v", i, err)
		}
	}
	// Rooms whose name would break the hash tag: empty (Redis would hash
	// each whole key, to different slots), with braces, or like an
	// escaped one.
	for _, room := range []string{"", "a}b", "{x}", "=", "=7b"} {
		if _, _, err := s.Append(context.Background(), room, "m", []byte(room)); err != nil {
			t.Fatalf("append to room %q: %v", room, err)
		}
		msgs, _, _, err := s.Since(context.Background(), room, 0, 0)
		if err != nil || len(msgs) != 1 || string(msgs[0].Body) != room {
			t.Fatalf("room %q holds %+v, %v; want its one message", room, msgs, err)
		}
	}
	for _, a := range addrs {
		n, err := command(a, "DBSIZE")
		if err != nil || n == ":0" {
			t.Errorf("node %s holds %s keys (%v); 30 rooms should reach every node", a, n, err)
		}
	}
}

// redisVersion returns the major and minor version of the server at addr.
func redisVersion(t *testing.T, addr string) (int, int) {
	t.Helper()
	info, err := command(addr, "INFO server")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
			f := strings.Split(v, ".")
			major, _ := strconv.Atoi(f[0])
			minor, _ := strconv.Atoi(f[1])
			return major, minor
		}
	}
	t.Fatalf("no redis_version in INFO server:\n%s", info)
	return 0, 0
}

// TestWaitAOF runs the conformance suite with wait-aof=1 on a redis-server
// with appendonly yes that this test starts. On a Redis older than 7.2,
// which has no WAITAOF, Open must refuse with a message naming the version,
// and the suite skips (TestWaitAOFRefusedBefore72 is the refusal's test).
func TestWaitAOF(t *testing.T) {
	addr := startRedis(t, redisServer(t), "--appendonly", "yes", "--appendfsync", "everysec")
	raw := "redis://" + addr + "/0?wait-aof=1"
	if major, minor := redisVersion(t, addr); major < 7 || major == 7 && minor < 2 {
		_, err := Open(context.Background(), mustURL(t, raw), store.Options{})
		if err == nil || !strings.Contains(err.Error(), "Redis 7.2 or later") {
			t.Fatalf("Open with wait-aof=1 on Redis %d.%d = %v; want an error naming Redis 7.2", major, minor, err)
		}
		t.Skipf("redis-server is %d.%d, without WAITAOF (7.2): Open refused wait-aof=1 as it should; conformance with it skipped", major, minor)
	}
	storetest.Run(t, opener(raw))
}

// TestWaitAOFNeedsAppendOnly: with appendonly no, WAITAOF could never
// return, so Open says what to change instead of failing every append.
func TestWaitAOFNeedsAppendOnly(t *testing.T) {
	addr := startRedis(t, redisServer(t), "--appendonly", "no")
	if major, minor := redisVersion(t, addr); major < 7 || major == 7 && minor < 2 {
		t.Skipf("redis-server is %d.%d: Open refuses wait-aof=1 for the version first (TestWaitAOFRefusedBefore72)", major, minor)
	}
	_, err := Open(context.Background(), mustURL(t, "redis://"+addr+"/0?wait-aof=1"), store.Options{})
	if err == nil || !strings.Contains(err.Error(), "appendonly is no") {
		t.Fatalf("Open with wait-aof=1 and appendonly no = %v; want an error naming appendonly", err)
	}
}

// TestOpenOptions: malformed options fail before any connection.
func TestOpenOptions(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis://127.0.0.1:1/0?wait-aof=yes", `wait-aof="yes": want 1 or 0`},
		{"redis://127.0.0.1:1/0?cluster=2", `cluster="2": want 1 or 0`},
		{"redis://127.0.0.1:1/3?cluster=1", `a cluster has only database 0`},
	} {
		_, err := Open(context.Background(), mustURL(t, tc.url), store.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v; want %q", tc.url, err, tc.want)
		}
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAppendDurableWithoutWAITAOF drives the wait-aof append path on a
// server that has no WAITAOF (Redis < 7.2; newer ones run the whole
// conformance suite in TestWaitAOF): the script runs (sent as text after
// NOSCRIPT), and the append fails rather than returning an ACK that no
// fsync backs.
func TestAppendDurableWithoutWAITAOF(t *testing.T) {
	addr := startRedis(t, redisServer(t), "--appendonly", "yes")
	if major, minor := redisVersion(t, addr); major > 7 || major == 7 && minor >= 2 {
		t.Skipf("redis-server %d.%d has WAITAOF; TestWaitAOF covers the path", major, minor)
	}
	s, err := Open(context.Background(), mustURL(t, "redis://"+addr+"/0"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.waitAOF = true // as Open would set it on a Redis with WAITAOF
	_, _, err = s.Append(context.Background(), "r", "m1", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "WAITAOF") {
		t.Fatalf("Append = %v; want a WAITAOF error, no ACK", err)
	}
	if head, err := s.Head(context.Background(), "r"); err != nil || head != 1 {
		t.Fatalf("head = %d, %v; want 1: the script ran before WAITAOF", head, err)
	}
}
