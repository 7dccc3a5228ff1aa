package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// runTables counts the tables named table or table_rooms in the test
// database.
func runTables(t *testing.T, table string) int {
	t.Helper()
	c, err := pgx.Connect(storetest.Context(t), storetest.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(storetest.Context(t),
		`SELECT count(*) FROM pg_tables WHERE tablename IN ($1::text, $1::text || '_rooms')`, table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunScopeDropped: a run's store URL puts its messages in tables of
// its own, which Drop removes; with keep=1 the run does not own them and
// they stay.
func TestRunScopeDropped(t *testing.T) {
	storetest.RequireService(t, "PostgreSQL", storetest.PostgresAddr)
	ctx := storetest.Context(t)
	for _, keep := range []bool{false, true} {
		id := storetest.RandomName(t)
		raw := storetest.PostgresURL
		if keep {
			raw += "&keep=1"
		}
		u, owned, err := store.ForRun(raw, id)
		if err != nil || owned == keep {
			t.Fatalf("ForRun(%s) = %s, owned %v, %v", raw, u, owned, err)
		}
		table := "stampede_" + id
		t.Cleanup(func() { store.Drop(context.Background(), u) })
		s, err := store.Open(ctx, u, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Append(ctx, "r", "m1", []byte("x")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if n := runTables(t, table); n != 2 {
			t.Fatalf("keep=%v: %d tables %s* during the run; want 2", keep, n, table)
		}
		if owned {
			if err := store.Drop(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		n := runTables(t, table)
		if !keep && n != 0 {
			t.Errorf("%d tables %s* left after Drop", n, table)
		}
		if keep && n != 2 {
			t.Errorf("keep=1: %d tables %s* left; want 2", n, table)
		}
	}
}

// TestCheck: a PostgreSQL that is not there is reported by store.Check in
// one line that quotes the URL without its user information.
func TestCheck(t *testing.T) {
	storetest.RequireService(t, "PostgreSQL", storetest.PostgresAddr)
	ctx := storetest.Context(t)
	if err := store.Check(ctx, storetest.PostgresURL); err != nil {
		t.Fatalf("Check(%s): %v", storetest.PostgresURL, err)
	}
	const bad = "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable"
	err := store.Check(ctx, bad)
	if err == nil {
		t.Fatalf("Check(%s) = nil; want an error", bad)
	}
	msg := err.Error()
	t.Logf("Check: %s", msg)
	if !strings.Contains(msg, "refused") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") ||
		!strings.HasPrefix(msg, "postgres://<redacted>@127.0.0.1:1/") {
		t.Errorf("Check(%s) = %q; want one line starting with the URL (password hidden) saying refused", bad, msg)
	}
}
