package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// The Redis and PostgreSQL tests use the real servers on 127.0.0.1. When
// one is unreachable its tests skip, unless STAMPEDE_REQUIRE_SERVICES=1
// (CI), when they fail.
const (
	redisURL    = "redis://127.0.0.1:6379/0"
	postgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

func requireService(t *testing.T, name, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return
	}
	msg := name + " is not reachable on " + addr + " (" + err.Error() + ")"
	if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg + "; STAMPEDE_REQUIRE_SERVICES=1 requires it")
	}
	t.Skip(msg + "; skipping (set STAMPEDE_REQUIRE_SERVICES=1 to fail instead)")
}

func randomName(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return "stampede_test_" + hex.EncodeToString(b[:])
}

// redisOpener opens a Redis store under a fresh key prefix, deleted at the
// end of the test.
func redisOpener(t *testing.T) opener {
	requireService(t, "Redis", "127.0.0.1:6379")
	prefix := randomName(t) + ":"
	t.Cleanup(func() {
		u, _ := url.Parse(redisURL)
		s, err := OpenRedis(context.Background(), u, Options{})
		if err != nil {
			return
		}
		defer s.Close()
		ctx := context.Background()
		iter := s.c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s.c.Del(ctx, iter.Val())
		}
	})
	return func(t *testing.T, opt Options) Store {
		s, err := Open(ctxT(t), redisURL+"?prefix="+url.QueryEscape(prefix), opt)
		if err != nil {
			t.Fatalf("Open redis: %v", err)
		}
		return s
	}
}

// postgresOpener opens a PostgreSQL store in a fresh table, dropped at the
// end of the test.
func postgresOpener(t *testing.T) opener {
	requireService(t, "PostgreSQL", "127.0.0.1:5432")
	table := randomName(t)
	t.Cleanup(func() {
		s, err := Open(context.Background(), postgresURL+"&table="+table, Options{})
		if err != nil {
			return
		}
		defer s.Close()
		s.(*Postgres).DropTables(context.Background())
	})
	return func(t *testing.T, opt Options) Store {
		s, err := Open(ctxT(t), postgresURL+"&table="+table, opt)
		if err != nil {
			t.Fatalf("Open postgres: %v", err)
		}
		return s
	}
}
