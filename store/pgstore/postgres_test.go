package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// TestConformance runs the conformance suite (package storetest) on the
// real PostgreSQL on 127.0.0.1, opening it by URL through store.Open
// (which this package's init registered the schemes for). It skips when
// PostgreSQL is unreachable, unless STAMPEDE_REQUIRE_SERVICES=1.
func TestConformance(t *testing.T) {
	storetest.Run(t, fresh)
}

// TestPostgresqlScheme: postgresql:// is the other spelling libpq accepts,
// registered too; both open the same tables.
func TestPostgresqlScheme(t *testing.T) {
	open := fresh(t)
	s := open(t, store.Options{})
	if _, _, err := s.Append(storetest.Context(t), "r", "m1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	u := strings.Replace(storetest.PostgresURL, "postgres://", "postgresql://", 1) + "&table=" + s.(*Store).table
	s2, err := store.Open(storetest.Context(t), u, store.Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", u, err)
	}
	defer s2.Close()
	if h, err := s2.Head(storetest.Context(t), "r"); err != nil || h != 1 {
		t.Fatalf("Head through postgresql:// = %d, %v; want 1", h, err)
	}
}

// fresh opens a PostgreSQL store in a new table, dropped at the end of the
// test.
func fresh(t *testing.T) storetest.Opener {
	storetest.RequireService(t, "PostgreSQL", storetest.PostgresAddr)
	table := storetest.RandomName(t)
	t.Cleanup(func() {
		s, err := store.Open(context.Background(), storetest.PostgresURL+"&table="+table, store.Options{})
		if err != nil {
			return
		}
		defer s.Close()
		s.(*Store).DropTables(context.Background())
	})
	return func(t *testing.T, opt store.Options) store.Store {
		s, err := store.Open(storetest.Context(t), storetest.PostgresURL+"&table="+table, opt)
		if err != nil {
			t.Fatalf("Open postgres: %v", err)
		}
		return s
	}
}
