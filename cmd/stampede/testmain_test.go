package main

import (
	"os"
	"testing"
)

// testMainEnv makes the test binary run stampede's main instead of the
// tests: a test starts stampede as a real process (to look at its command
// line, or Ctrl-C it), and its agent children, started from the same
// executable with the same environment, run main too.
const testMainEnv = "STAMPEDE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
