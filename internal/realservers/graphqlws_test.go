package realservers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/session"
)

func gqlSession(token string) session.Config {
	return session.Config{Protocol: session.GraphQLWS, GraphQLWS: session.GraphQLWSConfig{
		Payload:    json.RawMessage(`{"token":"` + token + `"}`),
		Operations: []json.RawMessage{json.RawMessage(`{"query":"subscription { greetings }"}`)},
	}}
}

// TestGraphQLWSKillRestart: graphql-ws 6.4 on ws 8, the server pinging
// every 300 ms and waiting 1 s for connection_init.
func TestGraphQLWSKillRestart(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "graphqlws.js", "300")
	holdKillRestart(t, srv, srv.url("ws", "/"), 40, gqlSession("s3cret"), 1500*time.Millisecond)
}

// TestGraphQLWSForbidden: onConnect refusing the payload closes 4403,
// session_auth, and stops every client.
func TestGraphQLWSForbidden(t *testing.T) {
	t.Parallel()
	srv := startNode(t, "graphqlws.js", "300")
	stopsAs(t, srv.url("ws", "/"), 5, gqlSession("wrong"), connerr.SessionAuth)
}
