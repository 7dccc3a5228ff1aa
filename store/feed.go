package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Update tells a follower that room's messages through Seq are stored.
// It is a hint, not the message: the store stays the source of truth, and
// a follower reads what it has not delivered with Since. An Update with
// an empty Room means updates may have been missed (the follower's link to
// the store was re-established): every room should be read again.
type Update struct {
	Room string
	Seq  uint64
}

// Feed is implemented by a store that several target processes can share
// and whose appends they can follow: the store's own publish/subscribe
// (Redis: a stream read with XREAD BLOCK; PostgreSQL: LISTEN/NOTIFY;
// JetStream: a consumer on the message stream). Rooms then fan out across
// every process of a group (docs/protocol.md, "Across processes").
type Feed interface {
	// Follow calls fn, from one goroutine, for every message any process
	// stores from about the time Follow is called until ctx ends, then
	// returns ctx's error. An update comes only after the message is
	// readable with Since. Once it is subscribed, and whenever the link to
	// the store broke and is re-established, Follow calls fn(Update{})
	// (recheck every room): a process follows the feed beside a server
	// that may already have members.
	// Follow returns early only for an error it cannot recover from.
	Follow(ctx context.Context, fn func(Update)) error
}

// Shared reports whether st can be shared by several processes with
// rooms fanned out among them: it is a Feed whose Shared method (if any)
// says so. A Redis Cluster, for instance, has no single feed stream.
func Shared(st Store) bool {
	f, ok := st.(Feed)
	if !ok {
		return false
	}
	if s, ok := f.(interface{ Shared() bool }); ok {
		return s.Shared()
	}
	return true
}

// sharedSchemes are the URL schemes of backends that implement Feed and
// that several processes can open at once.
var sharedSchemes = map[string]bool{"redis": true, "postgres": true, "postgresql": true, "nats": true, "jetstream": true}

// CheckShared reports, without opening it, why the store named by rawURL
// cannot be shared by several target processes with rooms fanned out
// among them, or nil if it can: the embedded file log is one process's
// (its directory is locked), and a Redis Cluster has no single feed stream.
func CheckShared(rawURL string) error {
	var u *url.URL
	if strings.Contains(rawURL, "://") {
		var err error
		if u, err = url.Parse(rawURL); err != nil {
			return badURL(rawURL, err)
		}
	}
	if u == nil || u.Scheme == "file" {
		return fmt.Errorf("the embedded file store %q belongs to one process; several target processes share a jetstream:///dir (the embedded JetStream, run by the group), nats://, redis:// or postgres:// store", rawURL)
	}
	if !sharedSchemes[u.Scheme] {
		return fmt.Errorf("store %q cannot be shared by several target processes", shown(u))
	}
	if u.Scheme == "redis" && u.Query().Get("cluster") != "" && u.Query().Get("cluster") != "0" && u.Query().Get("cluster") != "false" {
		return fmt.Errorf("store %q: a Redis Cluster has no single feed stream for rooms across processes; use one target process or a standalone Redis", shown(u))
	}
	return nil
}

// HostFunc starts the server of a store that a target group's owner runs
// for its processes (the embedded JetStream of a jetstream:///dir URL) and
// returns the URL the processes open, and how to stop the server.
type HostFunc func(ctx context.Context, u *url.URL) (shared string, stop func() error, err error)

var (
	hostsMu sync.Mutex
	hosts   = map[string]HostFunc{}
)

// RegisterHost makes Host start the server of scheme's URLs with h; a
// backend package calls it from its init, as Register.
func RegisterHost(scheme string, h HostFunc) {
	hostsMu.Lock()
	defer hostsMu.Unlock()
	if _, dup := hosts[scheme]; dup || h == nil {
		panic("store: RegisterHost twice, or nil, for scheme " + scheme)
	}
	hosts[scheme] = h
}

// Host is called by the owner of a target group, before it starts the
// processes: for a store whose server the owner runs (jetstream:///dir)
// it starts that server and returns the URL the processes open instead;
// for any other store it returns rawURL and a no-op stop.
func Host(ctx context.Context, rawURL string) (string, func() error, error) {
	nop := func() error { return nil }
	if rawURL == "" || !strings.Contains(rawURL, "://") {
		return rawURL, nop, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", nil, badURL(rawURL, err)
	}
	hostsMu.Lock()
	h := hosts[u.Scheme]
	hostsMu.Unlock()
	if h == nil {
		return rawURL, nop, nil
	}
	return h(ctx, u)
}
