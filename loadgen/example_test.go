package loadgen_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// A fleet of three clients holds its connections to a server for a moment;
// the report counts the attempts.
func Example() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() { // a minimal server: upgrade, then hold
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := ws.Upgrade(c); err == nil {
					_, _ = c.Read(make([]byte, 1))
				}
			}()
		}
	}()

	fleet, err := loadgen.New(loadgen.Config{Client: spec.Client{URL: "ws://" + ln.Addr().String() + "/",
		Clients: 3,
		Policy:  backoff.MustParse("exp:initial=100ms,max=5s,jitter=0.5"),
		Seed:    42},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for fleet.Stats().Connected < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel() // all connected: end the run
	}()
	rep, err := fleet.Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	var attempts, successes uint32
	for _, b := range rep.Timeline {
		attempts += b.Attempts
		successes += b.Successes
	}
	fmt.Printf("clients %d, attempts %d, connected %d\n", rep.Clients, attempts, successes)
	// Output: clients 3, attempts 3, connected 3
}
