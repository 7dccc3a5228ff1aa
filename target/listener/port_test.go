package listener

import (
	"testing"
)

// Two storms that look for a port at once, each before the other has
// bound one, get different ports: a target group binds with SO_REUSEPORT,
// so a second group on the same port would join the first's and each
// storm's clients would reach the other's targets.
func TestOnFreePortTwoStormsAtOnce(t *testing.T) {
	first := firstPort
	t.Cleanup(func() { firstPort = first })
	k := first(portHigh - portLow + 1)
	firstPort = func(int) int { return k } // both searches start at the same port

	var inner string
	var lns []*Listener
	t.Cleanup(func() {
		for _, ln := range lns {
			ln.Close()
		}
	})
	bind := func(addr string) error {
		ln, err := Listen(addr, 16)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
		return nil
	}
	var outer string
	c1, err := OnFreePort(func(addr string) error {
		outer = addr
		// The second storm looks and binds before the first binds.
		c2, err := OnFreePort(func(addr string) error { inner = addr; return bind(addr) })
		if err != nil {
			return err
		}
		t.Cleanup(func() { c2.Close() })
		return bind(addr)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if outer == inner {
		t.Fatalf("both storms listen on %s: want a port each", outer)
	}
	port := func(addr string) string { return addr[len("127.0.0.1:"):] }
	t.Logf("first storm %s, second %s", port(outer), port(inner))
}
