package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/stampede-dev/stampede/results"
)

// Kernel counter files: header/value line pairs per prefix ("TcpExt:",
// "IpExt:", "Tcp:", ...).
var kernelFiles = []string{"/proc/net/netstat", "/proc/net/snmp"}

// KernelCounters maps "Prefix.Name" (e.g. "TcpExt.ListenOverflows",
// "Tcp.RetransSegs") to the counter's value. Most are monotonic counters;
// a few are gauges (Tcp.CurrEstab) or constants (Tcp.MaxConn is -1), hence
// int64.
//
// The counters are those of the network namespace of the process that read
// them, summed over every socket in it: host-wide, not per process. A delta
// taken around a run includes whatever else the namespace did meanwhile;
// on a shared machine, read it as "at least this much happened", and run in
// a namespace of its own for exact figures.
type KernelCounters map[string]int64

// KernelSnapshot reads /proc/net/netstat and /proc/net/snmp of the calling
// process's network namespace.
func KernelSnapshot() (KernelCounters, error) {
	c := KernelCounters{}
	for _, name := range kernelFiles {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("results: kernel counters: %w", err)
		}
		err = ParseKernelCounters(f, c)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("results: kernel counters: %s: %w", name, err)
		}
	}
	return c, nil
}

// ParseKernelCounters reads the format of /proc/net/netstat and
// /proc/net/snmp into c: each prefix has a header line of names followed by
// a line of values, "TcpExt: A B" then "TcpExt: 1 2".
func ParseKernelCounters(r io.Reader, c KernelCounters) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // TcpExt lines are a few KB
	var header []string
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		prefix := strings.TrimSuffix(header[0], ":")
		if fields[0] != header[0] || !strings.HasSuffix(header[0], ":") {
			return fmt.Errorf("line %d: values %q do not follow header %q", line, fields[0], header[0])
		}
		if len(fields) != len(header) {
			return fmt.Errorf("line %d: %s has %d names but %d values", line, prefix, len(header)-1, len(fields)-1)
		}
		for i := 1; i < len(fields); i++ {
			v, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				// Counters are unsigned longs in the kernel; one past
				// MaxInt64 is not worth failing a run for.
				u, uerr := strconv.ParseUint(fields[i], 10, 64)
				if uerr != nil {
					return fmt.Errorf("line %d: %s.%s: %w", line, prefix, header[i], err)
				}
				v = int64(u)
			}
			c[prefix+"."+header[i]] = v
		}
		header = nil
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if header != nil {
		return fmt.Errorf("line %d: header %q has no values", line, header[0])
	}
	return nil
}

// Since returns c minus before for every counter in c: what happened
// between the two snapshots. A counter missing from before counts from 0.
func (c KernelCounters) Since(before KernelCounters) KernelCounters {
	d := make(KernelCounters, len(c))
	for k, v := range c {
		d[k] = v - before[k]
	}
	return d
}

// Delta returns the change of the herd counters from before to after.
func Delta(before, after KernelCounters) results.KernelDelta {
	d := after.Since(before)
	return results.KernelDelta{
		ListenOverflows:      d["TcpExt.ListenOverflows"],
		ListenDrops:          d["TcpExt.ListenDrops"],
		TCPSynRetrans:        d["TcpExt.TCPSynRetrans"],
		TCPReqQFullDoCookies: d["TcpExt.TCPReqQFullDoCookies"],
		TCPReqQFullDrop:      d["TcpExt.TCPReqQFullDrop"],
		SyncookiesSent:       d["TcpExt.SyncookiesSent"],
		SyncookiesRecv:       d["TcpExt.SyncookiesRecv"],
		SyncookiesFailed:     d["TcpExt.SyncookiesFailed"],
		TCPTimeouts:          d["TcpExt.TCPTimeouts"],
		TCPAbortOnTimeout:    d["TcpExt.TCPAbortOnTimeout"],
		TCPBacklogDrop:       d["TcpExt.TCPBacklogDrop"],
		ActiveOpens:          d["Tcp.ActiveOpens"],
		PassiveOpens:         d["Tcp.PassiveOpens"],
		AttemptFails:         d["Tcp.AttemptFails"],
		EstabResets:          d["Tcp.EstabResets"],
		RetransSegs:          d["Tcp.RetransSegs"],
		OutRsts:              d["Tcp.OutRsts"],
	}
}
