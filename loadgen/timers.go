package loadgen

// timerHeap is a reactor's deadlines: a binary min-heap of (deadline, client)
// with each client's position kept in the client (client.timer), so a
// client has at most one deadline and rescheduling or cancelling it is
// O(log n). In every state a client waits for at most one thing: a backoff
// wake-up, a connect or handshake deadline, or its next message.
//
// Deadlines are nanoseconds from the run's start. A heap of 16-byte entries
// costs 16 bytes per scheduled client and never allocates once grown.
type timerHeap struct {
	e       []timerEntry
	clients []client // the reactor's shard, indexed by timerEntry.c
}

type timerEntry struct {
	at int64 // deadline, ns from the run's start
	c  int32 // index of the client in the reactor's shard
}

// noTimer marks a client without a deadline.
const noTimer = -1

// len returns the number of scheduled clients.
func (h *timerHeap) len() int { return len(h.e) }

// peek returns the earliest deadline; the heap must not be empty.
func (h *timerHeap) peek() timerEntry { return h.e[0] }

// schedule sets client c's deadline to at, replacing any earlier one.
func (h *timerHeap) schedule(c int32, at int64) {
	cl := &h.clients[c]
	if i := cl.timer; i != noTimer {
		old := h.e[i].at
		h.e[i].at = at
		if at < old {
			h.up(int(i))
		} else {
			h.down(int(i))
		}
		return
	}
	cl.timer = int32(len(h.e))
	h.e = append(h.e, timerEntry{at: at, c: c})
	h.up(len(h.e) - 1)
}

// cancel removes client c's deadline, if any.
func (h *timerHeap) cancel(c int32) {
	i := h.clients[c].timer
	if i == noTimer {
		return
	}
	h.removeAt(int(i))
}

// pop removes and returns the earliest deadline; the heap must not be empty.
func (h *timerHeap) pop() timerEntry {
	top := h.e[0]
	h.removeAt(0)
	return top
}

func (h *timerHeap) removeAt(i int) {
	h.clients[h.e[i].c].timer = noTimer
	last := len(h.e) - 1
	if i != last {
		h.e[i] = h.e[last]
		h.clients[h.e[i].c].timer = int32(i)
	}
	h.e = h.e[:last]
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.e[p].at <= h.e[i].at {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.e)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.e[r].at < h.e[l].at {
			m = r
		}
		if h.e[i].at <= h.e[m].at {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *timerHeap) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.clients[h.e[i].c].timer = int32(i)
	h.clients[h.e[j].c].timer = int32(j)
}
