//go:build race

package loadgen

// raceEnabled is true when the race detector is on.
const raceEnabled = true
