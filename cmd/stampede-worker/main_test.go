package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoStoreDrivers: the worker runs loadgen shares and targets without a
// store, so it must not link the Redis or PostgreSQL driver (package
// store's networked backends, store/redisstore and store/pgstore, are
// imported only by cmd/stampede). Linked, they cost every loadgen process
// of a run about 3 MB of RSS (docs/protocol.md, "Stores").
func TestNoStoreDrivers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"github.com/redis/go-redis",
			"github.com/jackc/pgx",
			"github.com/stampede-dev/stampede/store/redisstore",
			"github.com/stampede-dev/stampede/store/pgstore",
		} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("stampede-worker links %s", pkg)
			}
		}
	}
}
