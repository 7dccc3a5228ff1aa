package jsstore

import (
	"context"
	"testing"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// TestConformance runs the conformance suite on a real NATS server with
// JetStream embedded in the test (file storage in a temporary folder),
// each store a client of it as a target process is.
func TestConformance(t *testing.T) {
	storetest.Run(t, fresh)
}

// fresh starts an embedded server of its own for t and opens stores on it
// by nats:// URL through store.Open.
func fresh(t *testing.T) storetest.Opener {
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return func(t *testing.T, opt store.Options) store.Store {
		s, err := store.Open(storetest.Context(t), srv.URL(), opt)
		if err != nil {
			t.Fatalf("Open %s: %v", srv.URL(), err)
		}
		return s
	}
}

// TestEmbeddedURL: jetstream:///dir opened by one process runs the server
// itself, and a second opener of the directory is refused (locked), and
// Host starts it for a group, handing out a nats:// URL.
func TestEmbeddedURL(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := store.Open(ctx, "jetstream://"+dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if seq, _, err := s.Append(ctx, "r", "a", []byte("x")); err != nil || seq != 1 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
	if _, err := store.Open(ctx, "jetstream://"+dir, store.Options{}); err == nil {
		t.Fatal("a second jetstream:// open of the same directory succeeded; want it locked")
	}
	s.Close()
	shared, stop, err := store.Host(ctx, "jetstream://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s2, err := store.Open(ctx, shared, store.Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", shared, err)
	}
	defer s2.Close()
	if seq, dup, err := s2.Append(ctx, "r", "a", []byte("x")); err != nil || seq != 1 || !dup {
		t.Fatalf("resend after restart = %d %v %v, want 1 dup", seq, dup, err)
	}
}
