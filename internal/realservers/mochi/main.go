// Command mochi runs mochi-mqtt (an MQTT 5 broker) with a WebSocket
// listener for the realservers tests: user "u" with password "pw" only,
// and GET /stats on its second port with the broker's own counts
// (clients connected, clients subscribed to both t/a and t/b). It is a
// module of its own so that the broker is a test's dependency, not the
// project's.
//
// Usage: mochi WS_PORT STATS_PORT
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// counts tracks each client's subscriptions.
type counts struct {
	mqtt.HookBase
	mu   sync.Mutex
	subs map[string]map[string]bool
}

func (h *counts) ID() string { return "counts" }

func (h *counts) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnSubscribed, mqtt.OnDisconnect}, []byte{b})
}

func (h *counts) OnSubscribed(cl *mqtt.Client, pk packets.Packet, reasonCodes []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.subs[cl.ID]
	if s == nil {
		s = map[string]bool{}
		h.subs[cl.ID] = s
	}
	for i, f := range pk.Filters {
		if i < len(reasonCodes) && reasonCodes[i] < 0x80 {
			s[f.Filter] = true
		}
	}
}

func (h *counts) OnDisconnect(cl *mqtt.Client, _ error, _ bool) {
	h.mu.Lock()
	delete(h.subs, cl.ID)
	h.mu.Unlock()
}

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: mochi WS_PORT STATS_PORT")
	}
	s := mqtt.New(&mqtt.Options{InlineClient: false})
	_ = s.AddHook(new(auth.Hook), &auth.Options{Ledger: &auth.Ledger{
		Auth: auth.AuthRules{{Username: "u", Password: "pw", Allow: true}},
		ACL:  auth.ACLRules{{Username: "u", Filters: auth.Filters{"#": auth.ReadWrite}}},
	}})
	c := &counts{subs: map[string]map[string]bool{}}
	_ = s.AddHook(c, nil)
	ws := listeners.NewWebsocket(listeners.Config{ID: "ws", Address: "127.0.0.1:" + os.Args[1]})
	if err := s.AddListener(ws); err != nil {
		log.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		both := 0
		for _, f := range c.subs {
			if f["t/a"] && f["t/b"] {
				both++
			}
		}
		c.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]int{"joined": int(s.Info.ClientsConnected), "subscribed": both})
	})
	fmt.Println("listening " + os.Args[1])
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Args[2], nil))
}
