// Package tcptest holds the TCP helpers of the fault proxy's tests, which
// run in two packages: proxy (the relay itself) and chaos (the proxy run
// the way `stampede proxy` runs it).
package tcptest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Echo starts a TCP server on loopback that echoes every byte and closes
// its side when the client does; it returns its address. It stops at the
// test's cleanup.
func Echo(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	return ln.Addr().String()
}

// EchoOnce writes msg on c and reads it back within d.
func EchoOnce(c net.Conn, msg []byte, d time.Duration) error {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return errors.New("echo differs")
	}
	return nil
}

// IsReset reports whether err is a TCP reset seen by the reader or writer.
func IsReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
