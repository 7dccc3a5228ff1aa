package sim

// orphan is a connection whose client gave up on its upgrade while the
// final ACK was being dropped: the client closed its socket, but its
// kernel goes on retransmitting the request (and now a FIN) on the data
// RTO schedule, and the listener keeps the request in its SYN queue
// (unless it was a cookie) and, deferring accept, waits for it (no
// SYN-ACK retransmit completes it: nextRetry). A
// retransmit that finds room in the accept queue completes the
// connection; the target accepts it, upgrades it and finds the client
// gone. Real runs show these orphaned accepts (PassiveOpens beyond the
// successes): 856-1,764 at 10,000 clients, 16,300-25,000 at 50,000,
// mostly after the fleet is back (lab/records/simulator.md).
type orphan struct {
	mark   int64  // when it stalled: the base of its retransmits
	client uint32 // whose it was
	sock   uint32 // the client's socket number of that attempt
	epoch  uint16 // its listener's epoch: a restart's exit drops it
	lst    uint16
	syn    uint8 // data retransmits so far
	cookie bool
}

// orphanRetries is how many times the kernel retransmits on a socket the
// application has closed: net.ipv4.tcp_orphan_retries 0 means 8.
const orphanRetries = 8

// orphan turns client id's stalled connection into an orphan at now; the
// client itself fails on.
func (s *sim) orphan(id uint32, now int64) {
	c := &s.clients[id]
	o := orphan{
		mark: c.mark, client: id, sock: c.sockets, epoch: s.lsts[c.lst].epoch, lst: c.lst,
		syn: c.syn, cookie: c.flags&flCookie != 0,
	}
	var oi uint32
	if k := len(s.freeOrphans); k > 0 {
		oi, s.freeOrphans = s.freeOrphans[k-1], s.freeOrphans[:k-1]
		s.orphans[oi] = o
	} else {
		oi = uint32(len(s.orphans))
		s.orphans = append(s.orphans, o)
	}
	s.orphanNext(oi, now)
}

// orphanNext schedules orphan oi's next retransmit, or ends it after the
// last: its request leaves the SYN queue.
func (s *sim) orphanNext(oi uint32, now int64) {
	o := &s.orphans[oi]
	at := s.nextRetry(o.client, o.mark, o.syn, orphanRetries)
	if at == noTime {
		if !o.cookie {
			s.lsts[o.lst].synq--
		}
		s.freeOrphans = append(s.freeOrphans, oi)
		return
	}
	s.q.push(entry{at: max(at, now), who: oi, kind: evOrphan})
}

// orphanRetry is an orphan's ACK reaching its listener again: dropped on
// a full accept queue, or queued, to be accepted dead.
func (s *sim) orphanRetry(oi uint32, now int64) {
	o := &s.orphans[oi]
	l := &s.lsts[o.lst]
	if o.epoch != l.epoch {
		// The listener closed since (a restart's exit): the request went
		// with it.
		s.freeOrphans = append(s.freeOrphans, oi)
		return
	}
	o.syn++
	s.retransmitted(now)
	if s.softnetDrop(now) {
		s.orphanNext(oi, now)
		return
	}
	if l.full() {
		s.ackDropped(o.cookie)
		s.orphanNext(oi, now)
		return
	}
	if o.cookie {
		s.kern.SyncookiesRecv++
	} else {
		l.synq--
	}
	l.push(qent{c: o.client, sock: o.sock})
	s.freeOrphans = append(s.freeOrphans, oi)
	s.arm(int(o.lst), now)
}
