package proxy

import (
	"net"
	"net/netip"
	"syscall"
	"time"
)

// readReset connects to addr and reads one byte: it returns the error, a
// reset either on connect (the RST can beat the connect's completion on
// loopback) or on the read.
func readReset(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}

func netipLoopback0() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:0") }

func closeFD(fd int) { syscall.Close(fd) }
