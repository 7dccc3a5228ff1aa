package listener

import (
	"errors"
	"net"
	"testing"

	"github.com/stampede-dev/stampede/spec"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// A port with a listener of another program is refused; once that
// listener closes, the same port is free again.
func TestCheckFree(t *testing.T) {
	for _, network := range []struct{ name, addr string }{
		{"IPv4", "127.0.0.1:0"},
		{"IPv6", "[::1]:0"},
	} {
		t.Run(network.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", network.addr)
			if err != nil {
				if network.name == "IPv6" {
					testenv.SkipUnlessRequired(t, "platform: no IPv6 loopback here: %v", err)
				}
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			var ce *spec.FieldError
			if err := CheckFree(addr); !errors.As(err, &ce) || ce.Field != "Server.Addr" {
				t.Fatalf("CheckFree(%s) beside a listener = %v, want a FieldError on Server.Addr", addr, err)
			}
			ln.Close()
			if err := CheckFree(addr); err != nil {
				t.Fatalf("CheckFree(%s) after the listener closed = %v, want nil", addr, err)
			}
		})
	}
	if err := CheckFree("127.0.0.1:0"); err != nil {
		t.Fatalf("port 0: %v", err)
	}
}

// A connected socket holding a port (not listening) does not count, nor
// does a group's reservation.
func TestCheckFreeIgnoresNonListeners(t *testing.T) {
	r, err := Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := CheckFree(r.Addr()); err != nil {
		t.Fatalf("beside a reservation: %v", err)
	}
}
