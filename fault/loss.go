package fault

import (
	"fmt"
	"strconv"
	"strings"
)

// The loss fault (Set.Loss) drops connections, not packets (TCP would
// hide packet loss as retransmits), each with probability Loss.

// LossDecimals is the most digits a loss percentage may have after the
// point; the schedule parser refuses more. Bounding it is what makes
// FormatPercent exact: p/100*100 is within a few ulps of p, far less than
// half of the last kept digit.
const LossDecimals = 6

// checkLoss says what is wrong with a loss probability, or nil.
func checkLoss(p float64) error {
	if p != p || p < 0 || p > 1 {
		return &FieldError{"Loss", fmt.Sprintf("must be a probability from 0 to 1, got %v", p)}
	}
	return nil
}

// FormatPercent writes a 0..1 probability as a percentage such as "1.5%".
func FormatPercent(p float64) string {
	s := strconv.FormatFloat(p*100, 'f', LossDecimals, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return s + "%"
}
