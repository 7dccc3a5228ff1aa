package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FDMargin is the number of open files a loadgen process keeps for itself
// (epoll instances, wake-up eventfds, output files, the Go runtime) on top
// of one per client.
const FDMargin = 64

// portRangeFile is where Linux keeps the ephemeral port range.
const portRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// LimitError says that a fleet needs more of a host resource than this
// process may use, with the numbers and what to do about it.
type LimitError struct {
	// Limit names the limit: "open files" or "ephemeral ports".
	Limit string
	// Clients is the fleet size that asked for too much.
	Clients int
	// Need is what the fleet needs, Have what the process may use.
	Need, Have int
	// Hint says how to fit the run.
	Hint string
}

// Error returns one line with the limit, the numbers and the remedy.
func (e *LimitError) Error() string {
	return fmt.Sprintf("loadgen: %d clients need %d %s but this process may use %d: %s",
		e.Clients, e.Need, e.Limit, e.Have, e.Hint)
}

// CheckLimits returns a *LimitError when this process cannot hold clients
// connections to one destination from sourceIPs source addresses (0 means
// the kernel's choice, one address). It first raises the soft open-file
// limit to the hard one, which is why it is not a pure function.
func CheckLimits(clients, sourceIPs int) error {
	files, err := raiseNoFile()
	if err != nil {
		return err
	}
	if need := clients + FDMargin; need > files {
		return &LimitError{
			Limit: "open files", Clients: clients, Need: need, Have: files,
			Hint: fmt.Sprintf("RLIMIT_NOFILE is %d (raised to the hard limit); run at most %d clients per process and spread the fleet over more loadgen processes",
				files, files-FDMargin),
		}
	}
	lo, hi, err := portRange()
	if err != nil {
		return err
	}
	ips := max(1, sourceIPs)
	ports := (hi - lo + 1) * ips
	if clients > ports {
		return &LimitError{
			Limit: "ephemeral ports", Clients: clients, Need: clients, Have: ports,
			Hint: fmt.Sprintf("%s is %d-%d (%d ports) per source address and destination, with %d source address(es); add source addresses (such as 127.0.0.2-127.0.0.9) or widen the range",
				portRangeFile, lo, hi, hi-lo+1, ips),
		}
	}
	return nil
}

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit and returns
// the soft limit now in force.
func raiseNoFile() (int, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("loadgen: reading RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	if lim.Cur > 1<<30 {
		return 1 << 30, nil
	}
	return int(lim.Cur), nil
}

// portRange reads the kernel's ephemeral port range.
func portRange() (lo, hi int, err error) {
	b, err := os.ReadFile(portRangeFile)
	if err != nil {
		return 0, 0, fmt.Errorf("loadgen: reading the ephemeral port range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("loadgen: %s: unexpected content %q", portRangeFile, b)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return 0, 0, fmt.Errorf("loadgen: %s: unexpected content %q", portRangeFile, b)
	}
	return lo, hi, nil
}
