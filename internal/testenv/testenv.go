// Package testenv decides whether a test may skip for something the
// machine lacks (a tool, a pseudo-terminal, IPv6 loopback, sock_diag).
// With STAMPEDE_REQUIRE_SERVICES=1, as .ci/run sets it, every test must
// run or fail: a skip there would hide a check CI is meant to make.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Required reports whether every test must run or fail
// (STAMPEDE_REQUIRE_SERVICES=1).
func Required() bool { return os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" }

// SkipUnlessRequired skips t with the message, or fails it when Required:
// what the test needs is missing and the environment requires it.
func SkipUnlessRequired(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatal(msg + " (STAMPEDE_REQUIRE_SERVICES=1 requires it)")
	}
	t.Skip(msg + "; skipping (STAMPEDE_REQUIRE_SERVICES=1 makes this fail)")
}
