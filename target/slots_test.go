package target

import (
	"testing"
	"time"
)

// A connection whose bytes came takes the freed slot before the accept
// loop; at most waitersPerSlot connections a slot wait holding none.
func TestSlots(t *testing.T) {
	var p slots
	p.init(1)
	if !p.acquire() {
		t.Fatal("acquire on a free pool failed")
	}
	for i := range waitersPerSlot {
		if !p.leave() {
			t.Fatalf("leave %d of %d refused", i+1, waitersPerSlot)
		}
		if !p.acquire() { // the accept loop takes the next connection
			t.Fatal("acquire after a leave failed")
		}
	}
	if p.leave() {
		t.Fatalf("a wait beyond the %d a slot may have was allowed", waitersPerSlot)
	}
	// One slot, held; a waiter's bytes come and the accept loop waits too.
	order := make(chan string, 2)
	go func() { p.rejoin(); order <- "rejoin" }()
	for {
		p.mu.Lock()
		r := p.returning
		p.mu.Unlock()
		if r == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	go func() { p.acquire(); order <- "acquire" }()
	time.Sleep(10 * time.Millisecond) // let the accept loop wait as well
	p.release()
	if first := <-order; first != "rejoin" {
		t.Fatalf("%s took the freed slot first; want the returning connection", first)
	}
	p.release()
	<-order
	p.close()
	if p.ready() || p.acquire() {
		t.Fatal("a closed pool still gives slots")
	}
}
