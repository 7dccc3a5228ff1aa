package sim

import (
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// DefaultHZ is this kernel's tick rate (CONFIG_HZ=250): a jiffy is 4 ms.
const DefaultHZ = 250

// timer returns when a kernel timer armed at now for d fires. The kernel's
// TCP timers (SYN and data retransmits, the listener's SYN-ACK
// retransmits) sit on its timer wheel, which does not fire a timer at its
// instant: the expiry, in jiffies, is rounded up to the granularity of the
// wheel level its delay falls in (level n holds delays from 63·8ⁿ⁻¹
// jiffies, granularity 8ⁿ jiffies: 4 ms below 252 ms, 32 ms up to 2 s,
// 256 ms up to 16 s at HZ 250), always past it. Timers of many sockets
// that expire within one granule therefore fire together, at a boundary
// shared by the whole machine: measured here, 200 SYNs dropped 1 ms apart
// were retransmitted in bursts 32 ms apart (docs/simulator.md, "Timer
// batching"). A jiffy of 0 means exact timers.
//
// The instant returned is the tick plus a few nanoseconds that give the
// order in which the tick runs its timers (wheelOrder), so the packets
// they send reach the listener in that order.
func (s *sim) timer(now int64, d time.Duration) int64 {
	j := s.jiffy
	if j <= 0 {
		return addSat(now, d)
	}
	dj := (int64(d) + j - 1) / j // msecs_to_jiffies rounds up
	shift, level := uint(0), 0
	for start := int64(63); dj >= start && shift < 24; start <<= 3 {
		shift += 3
		level++
	}
	expires := now/j + dj
	fire := ((expires>>shift + 1) << shift) * j
	return fire + wheelOrder(level, fire-now, (int64(1)<<shift)*j)
}

// wheelLevels bounds the levels timer uses (shift < 24: levels 0..8).
const wheelLevels = 9

// wheelOrder returns how many nanoseconds after its tick a timer of wheel
// level level, armed wait ns before it fires, runs; granule is its
// level's granularity. A tick (__run_timers) runs the expired buckets
// level by level from the highest down (`while (levels--)
// expire_timers(base, heads + levels)`), and a bucket's timers from the
// head of its list, where enqueue_timer puts each (hlist_add_head): the
// latest armed first. So of the timers one tick fires, a data retransmit
// armed 400 ms before runs before a SYN retransmit armed 1 s before, and
// a loss probe (level 0) after both. Each sends its packet into the CPU's
// backlog, which the network softirq then runs in that order: the first
// ones take the room the accept queue has, and a SYN after them finds it
// full. The rank within a level has an eighth of a granule's resolution
// (0..511), so every offset is below 5 µs: well inside the jiffy, and
// before the final ACKs that the tick's SYNs provoke (one RTT later).
func wheelOrder(level int, wait, granule int64) int64 {
	rank := min(max(wait, 0)/max(1, granule/8), 511)
	return int64(wheelLevels-1-level)*512 + rank
}

// clientTimer returns when a timer of client id's kernel armed at now for
// d fires. A fleet on one machine (IssueRate set: a loadgen) shares that
// machine's timer wheel, so its clients' retransmits fire together. A
// fleet of devices (IssueRate 0) has a kernel per client, whose jiffies
// count from its own boot: the same wheel, at a phase of its own, drawn
// per client, so their retransmits do not line up.
func (s *sim) clientTimer(id uint32, now int64, d time.Duration) int64 {
	if !s.devices || s.jiffy == 0 {
		return s.timer(now, d)
	}
	// A phase within the coarsest granule used (64 jiffies) is one
	// within every finer one.
	off := int64(backoff.Hash(s.cfg.Seed, streamJiffies, uint64(id), 0) % uint64(64*s.jiffy))
	return s.timer(now+off, d) - off
}

// streamJiffies is the draw of a device's timer-wheel phase.
const streamJiffies backoff.Stream = 1<<32 + 3

// DefaultNetdevBacklog is this kernel's net.core.netdev_max_backlog: the
// packets one CPU queues for its network softirq.
const DefaultNetdevBacklog = 1000

// softnetDrop reports whether a retransmit the timer wheel fires at now
// is dropped before TCP sees it. The timers of one tick run before the
// network softirq, so their packets all wait in one CPU's backlog queue,
// which holds netdev_max_backlog+1: measured with lab/synwheel -n 3000
// -gap 10us, a burst of 1,989 SYN retransmits let exactly 1,001 through
// and the other 988 connected at the next retransmit, 1 s later
// (/proc/net/softnet_stat counted the drops). Such a drop is no
// ListenOverflow; the packet is retransmitted on its schedule. The
// backlog is the loopback's, of one machine carrying the whole fleet: a
// fleet of devices (IssueRate 0) has none.
func (s *sim) softnetDrop(now int64) bool {
	if s.cfg.NetdevBacklog < 0 || s.jiffy == 0 || s.devices {
		return false
	}
	// A tick's packets are one burst, a few ns apart (wheelOrder).
	if tick := now / s.jiffy; tick != s.burstAt {
		s.burstAt, s.burstN = tick, 0
	}
	s.burstN++
	return s.burstN > s.cfg.NetdevBacklog+1
}
