package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// CPUTimes is the machine's CPU time from /proc/stat's "cpu" line, in
// seconds summed over every core.
type CPUTimes struct {
	// Busy is user + nice + system + irq + softirq (guest time is inside
	// user already).
	Busy float64
	// Steal is the time a hypervisor ran other guests.
	Steal float64
	// Total is Busy + Steal + idle + iowait: every core's wall time.
	Total float64
	// Cores is the number of cpuN lines.
	Cores int
}

// userHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux
// architecture Go runs on (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// ParseProcStat reads the "cpu" and "cpuN" lines of /proc/stat.
func ParseProcStat(r io.Reader) (CPUTimes, error) {
	var c CPUTimes
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			c.Cores++
			continue
		}
		if len(f) < 9 {
			return c, fmt.Errorf("/proc/stat: cpu line has %d fields, want at least 9", len(f))
		}
		var v [8]float64 // user nice system idle iowait irq softirq steal
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return c, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			v[i] = float64(n) / userHZ
		}
		c.Busy = v[0] + v[1] + v[2] + v[5] + v[6]
		c.Steal = v[7]
		c.Total = c.Busy + c.Steal + v[3] + v[4]
		found = true
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if !found {
		return c, fmt.Errorf("/proc/stat: no cpu line")
	}
	return c, nil
}

// ParseLoadAvg reads the 1-minute load average from /proc/loadavg.
func ParseLoadAvg(r io.Reader) (float64, error) {
	var load1 float64
	if _, err := fmt.Fscan(r, &load1); err != nil {
		return 0, fmt.Errorf("/proc/loadavg: %w", err)
	}
	return load1, nil
}

// readMachine reads /proc/stat and /proc/loadavg.
func readMachine() (CPUTimes, float64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPUTimes{}, 0, err
	}
	c, err := ParseProcStat(f)
	f.Close()
	if err != nil {
		return c, 0, err
	}
	l, err := os.Open("/proc/loadavg")
	if err != nil {
		return c, 0, err
	}
	defer l.Close()
	load1, err := ParseLoadAvg(l)
	return c, load1, err
}

// machineState is the machine's readings at the sampler's first and last
// samples, with the run's own CPU seconds at each.
type machineState struct {
	first, last         CPUTimes
	ownFirst, ownLast   float64
	at0, at1            time.Time
	load1Start, load1Mx float64
	samples             int
}

// note records one reading, taken at at with the run's processes at own
// CPU seconds in all.
func (m *machineState) note(at time.Time, c CPUTimes, load1, own float64) {
	if m.samples == 0 {
		m.first, m.ownFirst, m.at0, m.load1Start = c, own, at, load1
	}
	m.last, m.ownLast, m.at1 = c, own, at
	m.load1Mx = max(m.load1Mx, load1)
	m.samples++
}

// load is the machine's load from the first reading to the last; nil
// before two readings.
func (m *machineState) load() *results.MachineLoad {
	if m.samples < 2 {
		return nil
	}
	out := &results.MachineLoad{Cores: m.last.Cores, WindowS: m.at1.Sub(m.at0).Seconds(), Samples: m.samples,
		Load1Start: m.load1Start, Load1Max: m.load1Mx}
	if total := m.last.Total - m.first.Total; total > 0 {
		own := m.ownLast - m.ownFirst
		other := m.last.Busy - m.first.Busy - own
		out.OwnCPUShare = clamp01(own / total)
		out.OtherCPUShare = clamp01(other / total)
		out.StealShare = clamp01((m.last.Steal - m.first.Steal) / total)
	}
	out.Judge()
	return out
}

// clamp01 keeps a share in [0, 1]: the run's CPU and the machine's are
// read at slightly different instants and in different units.
func clamp01(x float64) float64 { return min(1, max(0, x)) }
