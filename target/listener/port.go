package listener

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"syscall"

	"github.com/stampede-dev/stampede/spec"
)

// Target ports are drawn from this range: below the default ephemeral range
// (32768-60999), so a client socket never holds the port a restarting
// target needs (FIELD-NOTES), and the range scripts/tune-host.sh reserves.
const (
	portLow  = 7000
	portHigh = 7999
)

// firstPort draws where FreePort's search starts in a range of n ports:
// random, so storms started together look at different ports first (a
// test's seam).
var firstPort = rand.IntN

// FreePort returns a loopback TCP port in [7000, 7999] that nothing is
// bound to now and no storm has claimed (OnFreePort).
func FreePort() (int, error) {
	port, c, err := claimFree()
	if err != nil {
		return 0, err
	}
	c.Close()
	return port, nil
}

// claimFree finds a port FreePort may return and claims it.
func claimFree() (int, *Claim, error) {
	start := firstPort(portHigh - portLow + 1)
	for i := 0; i <= portHigh-portLow; i++ {
		port := portLow + (start+i)%(portHigh-portLow+1)
		ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		if c, err := claim(port); err == nil {
			return port, c, nil
		}
	}
	return 0, nil, spec.Errorf("Server.Addr", "no free port in %d-%d on 127.0.0.1; give one", portLow, portHigh)
}

// A Claim holds a port found free for the storm that listens on it: a
// UDP socket bound to the same port on 127.0.0.1, which a second claim
// cannot bind. A target group binds its port with SO_REUSEPORT, so a
// second group binding the same port joins the first instead of failing
// with EADDRINUSE: two storms that found the same port free would each
// reach the other's targets. The claim is what tells them apart; the
// kernel drops it when its process exits.
type Claim struct{ c net.PacketConn }

// claim binds port's claim.
func claim(port int) (*Claim, error) {
	c, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	return &Claim{c}, nil
}

// Close gives the port up.
func (c *Claim) Close() error { return c.c.Close() }

// OnFreePort calls start with a free loopback address ("127.0.0.1:PORT")
// it has claimed, until start does not fail with EADDRINUSE: a port found
// free can still be taken before start binds it (a program binding it,
// a test running beside this one), so the bind itself is the test. The
// caller holds the claim while it listens and closes it after.
func OnFreePort(start func(addr string) error) (*Claim, error) {
	var err error
	for range 20 {
		var port int
		var c *Claim
		if port, c, err = claimFree(); err != nil {
			return nil, err
		}
		if err = start(fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return c, nil
		}
		c.Close()
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, err
}
