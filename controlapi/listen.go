package controlapi

import (
	"fmt"
	"io"
	"net"
)

// Listen listens on addr (host:port) for a control API and, when addr is
// not a loopback address, writes a warning to warn (nil: none): the token
// then travels in clear text over a network.
func Listen(addr string, warn io.Writer) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if warn != nil && !Loopback(addr) {
		fmt.Fprintf(warn, "warning: control API listens on %s, beyond loopback: anyone who can reach it and learns the token (sent in clear text) can stall, reject or shut down this process\n", ln.Addr())
	}
	return ln, nil
}
