package hoststat

import (
	"os"
	"strconv"
	"strings"
)

// EphemeralPorts returns the size of net.ipv4.ip_local_port_range in the
// calling process's network namespace, or 0 when it cannot be read.
func EphemeralPorts() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	return parsePortRange(string(b))
}

// parsePortRange reads "LOW HIGH" and returns HIGH-LOW+1, or 0.
func parsePortRange(s string) int {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || hi < lo {
		return 0
	}
	return hi - lo + 1
}
