package group

import (
	"context"
	"errors"
	"testing"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

// Run refuses a port another server listens on before it starts anything;
// a group member (JoinGroup) may share it.
func TestRunRefusesPortInUse(t *testing.T) {
	first, err := listener.Listen("127.0.0.1:0", 16)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = Run(ctx, RunConfig{Server: target.Config{Server: spec.Server{Addr: addr}}})
	var ce *spec.FieldError
	if !errors.As(err, &ce) || ce.Field != "Server.Addr" {
		t.Fatalf("Run on a port in use = %v, want a FieldError on Server.Addr", err)
	}
	second, err := listener.Listen(addr, 16) // what a group member does
	if err != nil {
		t.Fatalf("a member joining the port: %v", err)
	}
	second.Close()
}
