package target

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stampede-dev/stampede/spec"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// A port with a listener of another program is refused; once that
// listener closes, the same port is free again.
func TestCheckNoListener(t *testing.T) {
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
			if err := CheckNoListener(addr); !errors.As(err, &ce) || ce.Field != "Server.Addr" {
				t.Fatalf("CheckNoListener(%s) beside a listener = %v, want a FieldError on Server.Addr", addr, err)
			}
			ln.Close()
			if err := CheckNoListener(addr); err != nil {
				t.Fatalf("CheckNoListener(%s) after the listener closed = %v, want nil", addr, err)
			}
		})
	}
	if err := CheckNoListener("127.0.0.1:0"); err != nil {
		t.Fatalf("port 0: %v", err)
	}
}

// A connected socket holding a port (not listening) does not count, nor
// does a group's reservation.
func TestCheckNoListenerIgnoresNonListeners(t *testing.T) {
	r, err := reservePort("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := CheckNoListener(r.addr); err != nil {
		t.Fatalf("beside a reservation: %v", err)
	}
}

// Run refuses a port another server listens on before it starts anything;
// a group member (JoinGroup) may share it.
func TestRunRefusesPortInUse(t *testing.T) {
	first, err := Listen("127.0.0.1:0", 16)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = Run(ctx, RunConfig{Server: Config{Server: spec.Server{Addr: addr}}})
	var ce *spec.FieldError
	if !errors.As(err, &ce) || ce.Field != "Server.Addr" {
		t.Fatalf("Run on a port in use = %v, want a FieldError on Server.Addr", err)
	}
	second, err := Listen(addr, 16) // what a group member does
	if err != nil {
		t.Fatalf("a member joining the port: %v", err)
	}
	second.Close()
}
