package target

import "sync"

// waitersPerSlot is how many connections per upgrade slot may wait for
// their first bytes holding no slot (slots.leave).
const waitersPerSlot = 4

// slots is the upgrade pool's bound: Config.Upgraders slots, each held by
// a connection accepted and not yet upgraded, except those waiting for
// their first bytes (at most waitersPerSlot per slot), which hold none. A
// connection whose bytes came takes a slot before the accept loop may
// take the next connection, so the connections accepted and not yet
// upgraded never exceed the slots, the waiters and the one the accept
// loop holds, and the first to be accepted is the first upgraded.
type slots struct {
	mu        sync.Mutex
	cond      sync.Cond
	free      int  // slots nobody holds
	waiting   int  // connections waiting for their first bytes, no slot held
	waitCap   int  // the most that may
	returning int  // waiting ones whose bytes came, now waiting for a slot
	closed    bool // Shutdown began: every wait ends
}

func (p *slots) init(n int) {
	p.cond.L = &p.mu
	p.free, p.waitCap = n, waitersPerSlot*n
}

// ready waits until the accept loop may accept: a slot is free and no
// returning connection waits for one. It takes nothing (the accept loop
// holds no slot while it waits in accept, which a returning connection
// may need); false once closed.
func (p *slots) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for (p.free == 0 || p.returning > 0) && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}

// acquire takes a slot for a connection just accepted, after any
// returning connection; false once closed.
func (p *slots) acquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for (p.free == 0 || p.returning > 0) && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return false
	}
	p.free--
	return true
}

// release gives a slot back.
func (p *slots) release() {
	p.mu.Lock()
	p.free++
	p.mu.Unlock()
	p.cond.Broadcast()
}

// leave gives back the slot of a connection about to wait for its first
// bytes; false, the slot kept, when as many wait as may.
func (p *slots) leave() bool {
	p.mu.Lock()
	if p.waiting >= p.waitCap {
		p.mu.Unlock()
		return false
	}
	p.waiting++
	p.free++
	p.mu.Unlock()
	p.cond.Broadcast()
	return true
}

// rejoin ends the wait of a connection whose bytes came and takes a slot
// for it, before the accept loop may; false once closed (no slot held).
func (p *slots) rejoin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting--
	p.returning++
	for p.free == 0 && !p.closed {
		p.cond.Wait()
	}
	p.returning--
	if p.closed {
		return false
	}
	p.free--
	if p.returning == 0 {
		p.cond.Broadcast() // the accept loop may go on
	}
	return true
}

// drop ends the wait of a connection that failed before its bytes came.
func (p *slots) drop() {
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
}

// close ends every wait: Shutdown began.
func (p *slots) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}
