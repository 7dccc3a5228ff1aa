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

// FreePort returns a loopback TCP port in [7000, 7999] that nothing is
// bound to now.
func FreePort() (int, error) {
	start := rand.IntN(portHigh - portLow + 1)
	for i := 0; i <= portHigh-portLow; i++ {
		port := portLow + (start+i)%(portHigh-portLow+1)
		ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, spec.Errorf("Server.Addr", "no free port in %d-%d on 127.0.0.1; give one", portLow, portHigh)
}

// OnFreePort calls start with a free loopback address ("127.0.0.1:PORT")
// until start does not fail with EADDRINUSE: a port found free can still be
// taken before start binds it (another storm probing for a port, a test
// running beside this one), so the bind itself is the test.
func OnFreePort(start func(addr string) error) error {
	var err error
	for range 20 {
		var port int
		if port, err = FreePort(); err != nil {
			return err
		}
		if err = start(fmt.Sprintf("127.0.0.1:%d", port)); !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
	}
	return err
}
