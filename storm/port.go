package storm

import (
	"fmt"
	"math/rand/v2"
	"net"
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
	return 0, fmt.Errorf("no free port in %d-%d on 127.0.0.1; give --addr", portLow, portHigh)
}
