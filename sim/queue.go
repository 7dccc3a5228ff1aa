package sim

import (
	"slices"
	"time"
)

// bucketWidth is the width of one calendar bucket.
const bucketWidth = int64(time.Millisecond)

// entry is one pending event: 16 bytes, 8 packed in a future bucket
// (packKey). who is a client's index for client
// events, a listener's index for listener events, a planned event's index
// for chaos events.
type entry struct {
	at   int64
	who  uint32
	gen  uint8
	kind kind
}

// kind is what an entry does; the order breaks ties at one instant: chaos
// first (an event's Start sees the fleet as it was just before), then
// listeners, then clients.
type kind uint8

const (
	evChaos       kind = iota // a planned chaos event starts or ends (who: index into the run's actions)
	evAccept                  // a listener may accept (who: listener)
	evOrphan                  // an orphan's ACK reaches its listener again (who: orphan)
	evStart                   // a client starts an attempt
	evSyn                     // a client's SYN is retransmitted
	evAck                     // a client's final ACK reaches the listener
	evRetryAck                // a stalled client's data or the listener's SYN-ACK is sent again
	evConnTimeout             // a client's connect deadline or SYN give-up
	evHSTimeout               // a client's handshake deadline
	evUpgraded                // a client's 101 arrives
	evRamp                    // the next first connect of the ramp
	evClosed                  // a client's connection is closed by its stopping process
	evLoadgen                 // a loadgen process may start an attempt (who: its index; Config.Cores)
	evCloser                  // a stopping target process closes a slice of its connections (who: the process; Config.Cores)
)

// calendar is the event queue: one bucket per millisecond of the run.
// A future bucket holds its entries packed in one uint64 each (packKey),
// appended unordered in chunks; when the run reaches it, it is sorted once, and
// entries pushed into the running millisecond meanwhile go to a small
// 4-ary heap merged with it. Sorting a bucket of b entries is O(b log b)
// on 8-byte integers, sequential in memory; the order is time, then
// kind, then who (the tests' less), entries that differ only in gen being one
// live entry and stale ones that do nothing.
type calendar struct {
	buckets []bucket
	cur     int      // the bucket being run
	run     []uint64 // bucket cur, sorted
	ri      int      // next entry of run
	heap    []uint64 // entries pushed into bucket cur while it runs, packed, a 4-ary heap
	n       int      // pending entries
	free    []*chunk // chunks of buckets already run

	// touch, when set, is called with each window of the running bucket
	// before its first entry is popped (see touchWindow).
	touch func(keys []uint64)
	tw    int // run[:tw] has been given to touch
}

// touchWindow is how many entries of a sorted bucket are given to touch
// at a time: enough independent loads to keep the memory system busy,
// few enough that what they bring in is still cached when dispatched.
const touchWindow = 256

// A bucket's entries are kept in chunks from the calendar's free list,
// so a growing bucket is never copied (nor a fresh array cleared): its
// entries are copied once, into run, when it is reached.
type bucket struct {
	chunks []*chunk
	n      int // entries in the last chunk
}

const chunkLen = 128

type chunk [chunkLen]uint64

// The fields of a packed entry, from the most significant bits: the
// offset in its millisecond (20 bits), kind (4), who (32), gen (8).
const (
	offShift  = 44
	kindShift = 40
	whoShift  = 8
)

// Every offset in a bucket and every kind fit their fields.
var (
	_ = [1]struct{}{}[(bucketWidth-1)>>(64-offShift)]
	_ = [1]struct{}{}[evCloser>>(offShift-kindShift)]
)

func packKey(e entry, b int) uint64 {
	off := e.at - int64(b)*bucketWidth
	return uint64(off)<<offShift | uint64(e.kind)<<kindShift | uint64(e.who)<<whoShift | uint64(e.gen)
}

func unpackKey(k uint64, b int) entry {
	return entry{
		at:   int64(b)*bucketWidth + int64(k>>offShift),
		kind: kind(k >> kindShift & 15),
		who:  uint32(k >> whoShift),
		gen:  uint8(k),
	}
}

func newCalendar(length time.Duration) *calendar {
	return &calendar{buckets: make([]bucket, int64(length)/bucketWidth+1)}
}

// push adds e; an entry at or past the run's end is dropped: it never runs.
func (c *calendar) push(e entry) {
	b := int(e.at / bucketWidth)
	if b >= len(c.buckets) {
		return
	}
	c.n++
	if b <= c.cur {
		if e.at < int64(c.cur)*bucketWidth {
			panic("sim: an entry pushed before the running millisecond")
		}
		c.heapPush(packKey(e, c.cur))
		return
	}
	bk := &c.buckets[b]
	if len(bk.chunks) == 0 || bk.n == chunkLen {
		var ch *chunk
		if k := len(c.free); k > 0 {
			ch, c.free = c.free[k-1], c.free[:k-1]
		} else {
			ch = new(chunk)
		}
		bk.chunks = append(bk.chunks, ch)
		bk.n = 0
	}
	bk.chunks[len(bk.chunks)-1][bk.n] = packKey(e, b)
	bk.n++
}

// pop returns the earliest entry; ok is false when none is left.
func (c *calendar) pop() (e entry, ok bool) {
	for c.ri == len(c.run) && len(c.heap) == 0 {
		if c.n == 0 {
			return e, false
		}
		c.cur++
		if c.cur >= len(c.buckets) {
			return e, false
		}
		bk := &c.buckets[c.cur]
		if len(bk.chunks) == 0 {
			continue
		}
		c.run, c.ri = c.run[:0], 0
		last := len(bk.chunks) - 1
		for i, ch := range bk.chunks {
			if i < last {
				c.run = append(c.run, ch[:]...)
			} else {
				c.run = append(c.run, ch[:bk.n]...)
			}
			c.free = append(c.free, ch)
		}
		*bk = bucket{}
		slices.Sort(c.run)
		c.tw = 0
	}
	c.n--
	if c.ri < len(c.run) {
		if c.ri == c.tw && c.touch != nil {
			c.tw = min(len(c.run), c.tw+touchWindow)
			c.touch(c.run[c.ri:c.tw])
		}
		if k := c.run[c.ri]; len(c.heap) == 0 || k <= c.heap[0] {
			c.ri++
			return unpackKey(k, c.cur), true
		}
	}
	k := c.heap[0]
	last := len(c.heap) - 1
	c.heap[0] = c.heap[last]
	c.heap = c.heap[:last]
	if last > 0 {
		c.down(0)
	}
	return unpackKey(k, c.cur), true
}

func (c *calendar) heapPush(k uint64) {
	c.heap = append(c.heap, k)
	h := c.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if h[i] >= h[p] {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (c *calendar) down(i int) {
	h := c.heap
	n := len(h)
	for {
		f := 4*i + 1
		if f >= n {
			return
		}
		m := f
		for k := f + 1; k < f+4 && k < n; k++ {
			if h[k] < h[m] {
				m = k
			}
		}
		if h[m] >= h[i] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
