// Command centrifuge runs a centrifuge-go node (the library Centrifugo is
// built on) with its WebSocket transport at /connection/websocket, for the
// client-library presets and the realservers tests: a connect with the
// token "s3cret" is accepted (any other: disconnect 3500 invalid token),
// channels "room:*" may be subscribed ("room:forbidden": permission
// denied), and GET /stats on the same port has the node's own counts
// (clients connected, clients subscribed to two channels). It is a module
// of its own so that the server is a test's dependency, not the
// project's.
//
// Usage: centrifuge PORT [PING_INTERVAL [STALE_CLOSE_DELAY [PONG_TIMEOUT]]]
// (durations; the library's defaults are 25s, 15s and 8s; PONG_TIMEOUT
// defaults to a third of PING_INTERVAL).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/centrifugal/centrifuge"
)

// subs counts each client's subscribed channels.
type subs struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *subs) add(id string, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[id] += d; s.m[id] <= 0 || d == 0 {
		delete(s.m, id)
	}
}

func (s *subs) both() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.m {
		if k >= 2 {
			n++
		}
	}
	return n
}

func duration(i int, def time.Duration) time.Duration {
	if len(os.Args) <= i {
		return def
	}
	d, err := time.ParseDuration(os.Args[i])
	if err != nil {
		log.Fatal(err)
	}
	return d
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: centrifuge PORT [PING_INTERVAL [STALE_CLOSE_DELAY [PONG_TIMEOUT]]]")
	}
	ping := duration(2, 25*time.Second)
	node, err := centrifuge.New(centrifuge.Config{
		LogLevel:              centrifuge.LogLevelNone,
		ClientStaleCloseDelay: duration(3, 15*time.Second),
	})
	if err != nil {
		log.Fatal(err)
	}
	s := &subs{m: map[string]int{}}
	node.OnConnecting(func(_ context.Context, e centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		if e.Token != "s3cret" {
			return centrifuge.ConnectReply{}, centrifuge.DisconnectInvalidToken
		}
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: "u"}}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		id := c.ID()
		c.OnSubscribe(func(e centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			if !strings.HasPrefix(e.Channel, "room:") || e.Channel == "room:forbidden" {
				cb(centrifuge.SubscribeReply{}, centrifuge.ErrorPermissionDenied)
				return
			}
			cb(centrifuge.SubscribeReply{}, nil)
			s.add(id, 1)
		})
		c.OnUnsubscribe(func(centrifuge.UnsubscribeEvent) { s.add(id, -1) })
		c.OnDisconnect(func(centrifuge.DisconnectEvent) { s.add(id, 0) })
	})
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		CheckOrigin:    func(*http.Request) bool { return true },
		PingPongConfig: centrifuge.PingPongConfig{PingInterval: ping, PongTimeout: duration(4, ping/3)},
	}))
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]int{"joined": node.Hub().NumClients(), "subscribed": s.both()})
	})
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening " + os.Args[1])
	log.Fatal(http.Serve(l, mux))
}
