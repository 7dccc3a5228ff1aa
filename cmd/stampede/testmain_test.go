package main

import (
	"os"
	"strings"
	"testing"
)

// testMainEnv makes the test binary run stampede's main instead of the
// tests: a test starts stampede as a real process (to look at its command
// line, or Ctrl-C it), and its agent children, started from the same
// executable with the same environment, run main too.
const testMainEnv = "STAMPEDE_TEST_MAIN"

// childRace is what the tests add to GORACE for the processes they start
// from this binary. Built with the race detector, a process sleeps a
// second as it exits (atexit_sleep_ms, 1000 by default): a target
// restarted by the chaos schedule then came back a second late, and its
// clients saw it go down a second late, in runs of a few seconds. A race
// is still reported when it happens, and still fails the process.
const childRace = "atexit_sleep_ms=0"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		main()
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" "+childRace))
	os.Exit(m.Run())
}
