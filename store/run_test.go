package store

import (
	"context"
	"strings"
	"testing"
)

func TestForRun(t *testing.T) {
	const id = "2026-12-02T04-57-05Z-0a1b"
	for _, c := range []struct {
		in, want string
		owned    bool
	}{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0?prefix=stampede%3A" + id + "%3A", true},
		{"redis://127.0.0.1:6379/0?keep=1", "redis://127.0.0.1:6379/0?keep=1&prefix=stampede%3A" + id + "%3A", false},
		{"redis://127.0.0.1:6379/0?prefix=mine:", "redis://127.0.0.1:6379/0?prefix=mine:", false},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable&table=stampede_2026_12_02t04_57_05z_0a1b", true},
		{"postgresql://u@h/db?table=t", "postgresql://u@h/db?table=t", false},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222", false},
		{"/some/dir", "/some/dir", false},
	} {
		got, owned, err := ForRun(c.in, id)
		if err != nil || got != c.want || owned != c.owned {
			t.Errorf("ForRun(%q) = %q, %v, %v; want %q, %v", c.in, got, owned, err, c.want, c.owned)
		}
	}
}

// TestCheckUnknownScheme: a scheme no backend has is refused in one line
// that quotes the URL without its password.
func TestCheckUnknownScheme(t *testing.T) {
	err := Check(context.Background(), "mongodb://u:secret@127.0.0.1:27017/x")
	if err == nil {
		t.Fatal("Check accepted an unknown scheme")
	}
	msg := err.Error()
	if !strings.Contains(msg, `unknown scheme "mongodb"`) || strings.Contains(msg, "secret") || strings.Contains(msg, "\n") {
		t.Fatalf("Check error = %q; want one line naming the scheme, no password", msg)
	}
}
