package tlsconf

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve runs s on a loopback listener, handshaking every connection and
// answering one byte, until the test ends; it returns the address.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); s.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, s.Config())
				if s.Handshake(tc) == nil {
					tc.Write([]byte{1})
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dial makes one client handshake to addr with cache (nil: none), reads
// the server's byte (and with it a TLS 1.3 ticket) and says whether it
// resumed.
func dial(t *testing.T, addr string, cache tls.ClientSessionCache) bool {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ClientSessionCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().DidResume
}

func newServer(t *testing.T, o ServerOptions) *Server {
	t.Helper()
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A restart (a new Server) resumes the sessions of the old one only when
// both read one ticket-key file; without it, or with tickets off, every
// handshake is full. Both versions, and the counts of each server.
func TestResumptionAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         ServerOptions
		keyFile   bool
		wantAfter bool // the handshake after the restart resumes
	}{
		{"keys in memory, 1.3", ServerOptions{}, false, false},
		{"key file kept, 1.3", ServerOptions{}, true, true},
		{"key file kept, 1.2", ServerOptions{MaxVersion: Version12}, true, true},
		{"keys in memory, 1.2", ServerOptions{MaxVersion: Version12}, false, false},
		{"key file kept, RSA-2048", ServerOptions{Kind: RSA2048}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if tc.keyFile {
				o.TicketKeys = filepath.Join(t.TempDir(), "keys")
			}
			var cache Session
			before := newServer(t, o)
			addr := serve(t, before)
			if dial(t, addr, &cache) {
				t.Fatal("the first handshake resumed")
			}
			if !dial(t, addr, &cache) {
				t.Fatal("the second handshake to the same server did not resume")
			}
			if got := before.Stats(); got.Full != 1 || got.Resumed != 1 || got.FullCPUNS == 0 || got.ResumedCPUNS == 0 {
				t.Errorf("before the restart: %+v, want 1 full and 1 resumed, each with CPU", got)
			}
			after := newServer(t, o)
			if got := dial(t, serve(t, after), &cache); got != tc.wantAfter {
				t.Errorf("after the restart resumed = %v, want %v", got, tc.wantAfter)
			}
		})
	}
}

// Tickets off: nothing resumes. A client without a cache never resumes.
func TestNoTicketsNoCache(t *testing.T) {
	s := newServer(t, ServerOptions{NoTickets: true, TicketKeys: filepath.Join(t.TempDir(), "keys")})
	addr := serve(t, s)
	var cache Session
	for range 3 {
		if dial(t, addr, &cache) {
			t.Fatal("resumed with tickets off")
		}
	}
	open := serve(t, newServer(t, ServerOptions{}))
	for range 3 {
		if dial(t, open, nil) {
			t.Fatal("resumed without a session cache")
		}
	}
	if got := s.Stats(); got.Full != 3 || got.Resumed != 0 {
		t.Errorf("stats %+v, want 3 full", got)
	}
}

// Two processes of a group read one key file: a session from one resumes
// on the other.
func TestSiblingsShareKeys(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	a := serve(t, newServer(t, ServerOptions{TicketKeys: keys}))
	b := serve(t, newServer(t, ServerOptions{TicketKeys: keys}))
	var cache Session
	dial(t, a, &cache)
	if !dial(t, b, &cache) {
		t.Error("a session from one sibling did not resume on the other")
	}
}

// The key file: created with one key, rotated when its newest key is
// Rotate old, at most KeepKeys kept, newest first; an old key still
// decrypts after a rotation.
func TestKeyFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	now := time.Unix(1_800_000_000, 0)
	f := KeyFile{Path: path, Rotate: time.Hour, Now: func() time.Time { return now }}
	first, err := f.Refresh()
	if err != nil || len(first) != 1 {
		t.Fatalf("created: %d keys, %v; want 1", len(first), err)
	}
	now = now.Add(59 * time.Minute)
	if again, _ := f.Refresh(); len(again) != 1 || again[0] != first[0] {
		t.Fatalf("rotated before Rotate: %d keys", len(again))
	}
	now = now.Add(time.Minute)
	second, _ := f.Refresh()
	if len(second) != 2 || second[1] != first[0] || second[0] == first[0] {
		t.Fatalf("after Rotate: %d keys, want a new one first and the old second", len(second))
	}
	for range 10 {
		now = now.Add(time.Hour)
		f.Refresh()
	}
	if got, _ := f.Refresh(); len(got) != KeepKeys {
		t.Errorf("%d keys kept, want %d", len(got), KeepKeys)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// A rotation keeps the sessions of the older key: a client resumes after
// the server's next key took over encryption.
func TestResumesAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	s := newServer(t, ServerOptions{TicketKeys: path, Rotate: 24 * time.Hour})
	s.keys.Now = clock
	s.reload()
	addr := serve(t, s)
	var cache Session
	dial(t, addr, &cache)
	now = now.Add(25 * time.Hour)
	if err := s.reload(); err != nil {
		t.Fatal(err)
	}
	if !dial(t, addr, &cache) {
		t.Error("a session of the previous key did not resume after a rotation")
	}
}

func TestKeyFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(path, []byte("1800000000 abcd\n"), 0o600)
	if _, err := (KeyFile{Path: path}).Refresh(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a short key: %v, want an error naming line 1", err)
	}
	if _, err := NewServer(ServerOptions{MaxVersion: "1.1"}); err == nil {
		t.Error("version 1.1 accepted")
	}
	if _, err := NewServer(ServerOptions{Kind: "dsa"}); err == nil {
		t.Error("kind dsa accepted")
	}
}
