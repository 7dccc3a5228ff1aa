package serve

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/gobwas/ws"
)

// ActionCable's server side (Rails' ActionCable::Connection and its
// subscriptions), as little as a client needs: the welcome on open, a
// ping every 3 s (the Rails server's beat), each subscribe confirmed.

// actionCableBeat is Rails' ActionCable::Server::Connections::BEAT_INTERVAL.
const actionCableBeat = 3 * time.Second

var actionCableWelcome = []byte(`{"type":"welcome"}`)

// actionCablePing is the ping of the server's clock at now: its message
// is the time in seconds, as Rails sends it.
func actionCablePing(now time.Time) []byte {
	b := append([]byte(`{"type":"ping","message":`), strconv.FormatInt(now.Unix(), 10)...)
	return append(b, '}')
}

// actionCable answers one command: subscribe with confirm_subscription
// of the same identifier; unsubscribe and message need no answer. A
// frame that is not a command object closes the connection.
func actionCable(c Conn, p []byte) error {
	var cmd struct {
		Command    string `json:"command"`
		Identifier string `json:"identifier"`
	}
	if err := json.Unmarshal(p, &cmd); err != nil {
		return errors.New("actioncable: a frame that is not a command object")
	}
	if cmd.Command != "subscribe" {
		return nil
	}
	id, _ := json.Marshal(cmd.Identifier) // a string always marshals
	b := append([]byte(`{"identifier":`), id...)
	return c.Write(ws.OpText, append(b, `,"type":"confirm_subscription"}`...))
}
