package sim

import "time"

// bucketWidth is the width of one calendar bucket.
const bucketWidth = int64(time.Millisecond)

// entry is one pending event: 16 bytes. who is a client's index for client
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
	evStart                   // a client starts an attempt
	evSyn                     // a client's SYN is retransmitted
	evAck                     // a client's final ACK reaches the listener
	evRetryAck                // a stalled client's data or the listener's SYN-ACK is sent again
	evConnTimeout             // a client's connect deadline or SYN give-up
	evHSTimeout               // a client's handshake deadline
	evUpgraded                // a client's 101 arrives
	evRejected                // a client's upgrade is answered with an error status
	evRamp                    // the next first connect of the ramp
	evClosed                  // a client's connection is closed by its stopping process
)

// less orders entries by time, then kind, then who.
func less(a, b *entry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.who < b.who
}

// calendar is the event queue: one bucket per millisecond of the run,
// entries appended unordered, and the bucket being run kept as a 4-ary
// heap. Pushing and popping cost O(log b) for b entries in one
// millisecond, not O(log n) over every pending event; the buckets of a
// run take 24 bytes per millisecond.
type calendar struct {
	buckets [][]entry
	cur     int     // the bucket being run
	heap    []entry // bucket cur, heap-ordered
	n       int     // pending entries
	spare   [][]entry
}

func newCalendar(length time.Duration) *calendar {
	return &calendar{buckets: make([][]entry, int64(length)/bucketWidth+1)}
}

// push adds e; an entry at or past the run's end is dropped: it never runs.
func (c *calendar) push(e entry) {
	b := int(e.at / bucketWidth)
	if b >= len(c.buckets) {
		return
	}
	c.n++
	if b <= c.cur {
		c.heapPush(e)
		return
	}
	s := c.buckets[b]
	if s == nil && len(c.spare) > 0 {
		s, c.spare = c.spare[len(c.spare)-1], c.spare[:len(c.spare)-1]
	}
	c.buckets[b] = append(s, e)
}

// pop returns the earliest entry; ok is false when none is left.
func (c *calendar) pop() (e entry, ok bool) {
	for len(c.heap) == 0 {
		if c.n == 0 {
			return e, false
		}
		c.cur++
		if c.cur >= len(c.buckets) {
			return e, false
		}
		if s := c.buckets[c.cur]; len(s) > 0 {
			c.buckets[c.cur] = nil
			if cap(c.heap) > 0 {
				c.spare = append(c.spare, c.heap[:0])
			}
			c.heap = s
			for i := (len(s) - 2) / 4; i >= 0; i-- {
				c.down(i)
			}
		}
	}
	e = c.heap[0]
	last := len(c.heap) - 1
	c.heap[0] = c.heap[last]
	c.heap = c.heap[:last]
	if last > 0 {
		c.down(0)
	}
	c.n--
	return e, true
}

func (c *calendar) heapPush(e entry) {
	c.heap = append(c.heap, e)
	i := len(c.heap) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(&c.heap[i], &c.heap[p]) {
			break
		}
		c.heap[i], c.heap[p] = c.heap[p], c.heap[i]
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
			if less(&h[k], &h[m]) {
				m = k
			}
		}
		if !less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
