package target

// connTable holds the open connections, indexed by their socket's fd
// number: a slice of pointers (8 bytes per fd) rather than a map of ids (a
// map costs several times that per entry and is scanned whole by every
// GC). An fd number is taken by one open socket at a time, and a
// connection leaves the table before its fd is closed, so a slot never
// holds a connection whose fd number another socket got.
//
// The epoll event of a connection carries its key: the fd in the low 32
// bits and the low 32 bits of its id, never reused in practice, in the
// high ones, so an event still in flight when a connection closed finds no
// match rather than the next connection on the same fd. Guarded by
// Server.mu.
type connTable struct {
	byFD []*Conn
	n    int // connections in the table
}

// key is the epoll token of c's fd. No fd is 2^32-1, so no key is
// epoll.WakeToken.
func (c *Conn) key() uint64 { return uint64(uint32(c.sock.fd)) | uint64(uint32(c.id))<<32 }

func (t *connTable) add(c *Conn) {
	fd := int(c.sock.fd)
	if fd >= len(t.byFD) {
		grown := make([]*Conn, max(fd+1, 2*len(t.byFD), 64))
		copy(grown, t.byFD)
		t.byFD = grown
	}
	t.byFD[fd] = c
	t.n++
}

func (t *connTable) remove(c *Conn) {
	fd := int(c.sock.fd)
	if fd < len(t.byFD) && t.byFD[fd] == c {
		t.byFD[fd] = nil
		t.n--
	}
}

// lookup returns the connection an epoll key names, nil if it is gone.
func (t *connTable) lookup(key uint64) *Conn {
	fd := int(uint32(key))
	if fd >= len(t.byFD) {
		return nil
	}
	if c := t.byFD[fd]; c != nil && uint32(c.id) == uint32(key>>32) {
		return c
	}
	return nil
}

// all returns the open connections.
func (t *connTable) all() []*Conn {
	out := make([]*Conn, 0, t.n)
	for _, c := range t.byFD {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}
