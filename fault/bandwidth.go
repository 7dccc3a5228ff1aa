package fault

import (
	"fmt"
	"strconv"
	"strings"
)

// The bandwidth fault (Set.Bandwidth) limits each direction of each
// connection to a rate in bytes per second.

// MaxBandwidth bounds Set.Bandwidth, in bytes per second (1000GB/s).
const MaxBandwidth = 1e12

// checkBandwidth says what is wrong with a bandwidth, or nil.
func checkBandwidth(bps int64) error {
	if bps < 0 || bps > MaxBandwidth {
		return &FieldError{"Bandwidth", fmt.Sprintf("must be 0 (unlimited) or 1..%d bytes per second, got %d", int64(MaxBandwidth), bps)}
	}
	return nil
}

// FormatBandwidth writes bytes per second so that the text parses back to
// the same integer: with the largest decimal unit (GB, MB, KB) that divides
// it, else the largest binary one (GiB, MiB, KiB), else in the largest
// decimal unit not above it with as many decimals as needed ("12.5KB/s").
func FormatBandwidth(bps int64) string {
	units := []struct {
		name  string
		bytes int64
	}{{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if bps%u.bytes == 0 {
			return strconv.FormatInt(bps/u.bytes, 10) + u.name + "/s"
		}
	}
	for _, u := range units[:3] {
		if bps >= u.bytes {
			digits := len(strconv.FormatInt(u.bytes, 10)) - 1
			frac := fmt.Sprintf("%0*d", digits, bps%u.bytes)
			return strconv.FormatInt(bps/u.bytes, 10) + "." + strings.TrimRight(frac, "0") + u.name + "/s"
		}
	}
	return strconv.FormatInt(bps, 10) + "B/s"
}
