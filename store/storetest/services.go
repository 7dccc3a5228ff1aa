package storetest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"
)

// The Redis and PostgreSQL tests use the real servers on 127.0.0.1. When
// one is unreachable its tests skip, unless STAMPEDE_REQUIRE_SERVICES=1
// (CI), when they fail.
const (
	// RedisAddr is the address of the Redis server the tests use.
	RedisAddr = "127.0.0.1:6379"
	// RedisURL is the store URL of RedisAddr's database 0.
	RedisURL = "redis://" + RedisAddr + "/0"
	// PostgresAddr is the address of the PostgreSQL server the tests use.
	PostgresAddr = "127.0.0.1:5432"
	// PostgresURL is the store URL of PostgresAddr's database test, as
	// user postgres; it has a query, so more parameters follow "&".
	PostgresURL = "postgres://postgres@" + PostgresAddr + "/test?sslmode=disable"
)

// RequireService returns when name (e.g. "Redis") accepts TCP connections
// on addr within a second. Otherwise it skips t, or fails it when the
// environment has STAMPEDE_REQUIRE_SERVICES=1.
func RequireService(t *testing.T, name, addr string) {
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

// RandomName returns a fresh name for a key prefix or table,
// "stampede_test_" and 12 hex digits: valid as a PostgreSQL table name
// and unlikely to collide with another test's.
func RandomName(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return "stampede_test_" + hex.EncodeToString(b[:])
}
