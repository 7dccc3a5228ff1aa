package sim

import (
	"fmt"
	"strconv"

	"github.com/stampede-dev/stampede/calibration"
)

// MaxCalibratedClients is the fleet of the largest real run the model is
// calibrated against: the embedded calibration file's
// sim.max_calibrated_clients, with the command and date of that run
// (package calibration; docs/simulator.md "How far to trust it"). The
// figures of a larger simulated fleet are extrapolated, and its summary
// says so (CalibrationNote). A larger calibration point is an edit of
// that file, and of the docs' accuracy table.
var MaxCalibratedClients = calibration.MustInt("sim.max_calibrated_clients")

// CalibrationNote says, in one line, that a simulated fleet of clients
// lies above the largest calibrated real run, its figures extrapolated;
// "" when it does not.
func CalibrationNote(clients int) string {
	if clients <= MaxCalibratedClients {
		return ""
	}
	return fmt.Sprintf("%s clients is above the largest calibrated real run (%s): figures extrapolated",
		thousands(clients), thousands(MaxCalibratedClients))
}

// thousands writes n (not negative) with comma separators: 10,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
