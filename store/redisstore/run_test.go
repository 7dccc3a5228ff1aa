package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// runKeys counts the keys under prefix on the test Redis.
func runKeys(t *testing.T, prefix string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: storetest.RedisAddr})
	defer c.Close()
	keys, err := c.Keys(storetest.Context(t), globEscape(prefix)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestRunScopeDropped: a run's store URL puts every key (counters,
// streams, dedupe keys, the feed) under stampede:RUNID:, and Drop leaves
// none of them; with keep=1 the run does not own them and they stay.
func TestRunScopeDropped(t *testing.T) {
	storetest.RequireService(t, "Redis", storetest.RedisAddr)
	ctx := storetest.Context(t)
	for _, keep := range []bool{false, true} {
		id := storetest.RandomName(t)
		raw := storetest.RedisURL
		if keep {
			raw += "?keep=1"
		}
		u, owned, err := store.ForRun(raw, id)
		if err != nil || owned == keep {
			t.Fatalf("ForRun(%s) = %s, owned %v, %v", raw, u, owned, err)
		}
		prefix := "stampede:" + id + ":"
		t.Cleanup(func() { store.Drop(context.Background(), u) })
		s, err := store.Open(ctx, u, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, room := range []string{"a", "b"} {
			if _, err := s.AppendBatch(ctx, room, []store.Entry{{ID: "m1", Body: []byte("x")}, {ID: "m2", Body: []byte("y")}}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if n := runKeys(t, prefix); n < 8 { // per room: seq, log, 2 ids
			t.Fatalf("keep=%v: %d keys under %s during the run; want at least 8", keep, n, prefix)
		}
		if owned {
			if err := store.Drop(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		n := runKeys(t, prefix)
		if !keep && n != 0 {
			t.Errorf("%d keys left under %s after Drop", n, prefix)
		}
		if keep && n < 8 {
			t.Errorf("keep=1: %d keys left under %s; want them all", n, prefix)
		}
	}
}

// TestDropEscapesPrefix: a prefix with glob characters drops its own keys,
// not another prefix's that the unescaped pattern would match.
func TestDropEscapesPrefix(t *testing.T) {
	storetest.RequireService(t, "Redis", storetest.RedisAddr)
	ctx := storetest.Context(t)
	base := storetest.RandomName(t)
	other := storetest.RedisURL + "?prefix=" + base + "x:"
	t.Cleanup(func() { store.Drop(context.Background(), other) })
	for _, u := range []string{other, storetest.RedisURL + "?prefix=" + base + "%3F:"} {
		s, err := store.Open(ctx, u, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Append(ctx, "r", "m", []byte("x")); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := store.Drop(ctx, storetest.RedisURL+"?prefix="+base+"%3F:"); err != nil {
		t.Fatal(err)
	}
	if n := runKeys(t, base+"x:"); n == 0 {
		t.Fatalf("Drop of prefix %s? removed the keys of prefix %sx:", base, base)
	}
	if n := runKeys(t, base+"?:"); n != 0 {
		t.Fatalf("%d keys left under %s?:", n, base)
	}
}

// TestCheck: a Redis that is not there, or refuses the password, is
// reported by store.Check in one line that quotes the URL without its
// user information; the test Redis itself passes.
func TestCheck(t *testing.T) {
	storetest.RequireService(t, "Redis", storetest.RedisAddr)
	ctx := storetest.Context(t)
	if err := store.Check(ctx, storetest.RedisURL); err != nil {
		t.Fatalf("Check(%s): %v", storetest.RedisURL, err)
	}
	for _, c := range []struct{ url, want string }{
		{"redis://:hunter2@127.0.0.1:1/0", "connection refused"},
		{"redis://:hunter2@" + storetest.RedisAddr + "/0", "AUTH"},
		{"redis://" + storetest.RedisAddr + "/0?bogus=1", "bogus"},
	} {
		err := store.Check(ctx, c.url)
		if err == nil {
			t.Errorf("Check(%s) = nil; want an error", c.url)
			continue
		}
		msg := err.Error()
		t.Logf("Check: %s", msg)
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") ||
			!strings.HasPrefix(msg, strings.Replace(strings.TrimSuffix(c.url, "?bogus=1"), ":hunter2@", "<redacted>@", 1)+":") {
			t.Errorf("Check(%s) = %q; want one line starting with the URL (password hidden) and saying %q", c.url, msg, c.want)
		}
	}
}
