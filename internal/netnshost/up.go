package netnshost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Required reports whether tests must run rather than skip when
// namespaces cannot be made: STAMPEDE_REQUIRE_SERVICES=1, or CI set.
func Required() bool {
	return os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" || os.Getenv("CI") != ""
}

// Up brings up n hosts in a set of the test's own and removes them at the
// test's cleanup (after any cleanup registered later, so processes the
// test started in them have ended by then). When namespaces cannot be
// made here the test skips with the reason, or fails when Required.
func Up(t testing.TB, n int) Set {
	t.Helper()
	return UpAddrs(t, n, 1)
}

// UpAddrs is Up with m addresses per host (hosts.sh --addrs m).
func UpAddrs(t testing.TB, n, m int) Set {
	t.Helper()
	k := lease(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A test killed before its cleanup leaves its set behind; the lease
	// says nobody uses it now, so start from nothing.
	if err := DownSet(ctx, k); err != nil {
		unavailable(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := DownSet(ctx, k); err != nil {
			t.Errorf("netnshost: %v", err)
		}
	})
	s, err := UpSet(ctx, k, n, m)
	if err != nil {
		unavailable(t, err)
		t.Fatal(err)
	}
	if len(s.Hosts) != n {
		t.Fatalf("netnshost: asked hosts.sh for %d hosts, it printed %d: %+v", n, len(s.Hosts), s)
	}
	for _, h := range s.Hosts {
		if len(h.Addrs) != m {
			t.Fatalf("netnshost: asked hosts.sh for %d addresses per host, %s has %v", m, h.Name, h.Addrs)
		}
	}
	return s
}

// unavailable skips the test, or fails it when Required, if err says
// namespaces cannot be made here.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnavailable) {
		return
	}
	if Required() {
		t.Fatalf("%v (required: STAMPEDE_REQUIRE_SERVICES=1 or CI is set)", err)
	}
	t.Skipf("%v: skipping; run as root with iproute2 (STAMPEDE_REQUIRE_SERVICES=1 or CI makes this fail)", err)
}

// lease returns a set number (1..99) that no other test process holds,
// held until the test's cleanup: an exclusive flock on a file per set,
// which the kernel releases if the process dies.
func lease(t testing.TB) int {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, fmt.Errorf("%w: not root (uid %d)", ErrUnavailable, os.Geteuid()))
	}
	dir := "/run/lock"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	for k := 1; k <= 99; k++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("stampede-hosts-set%d.lease", k)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("netnshost: lease: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		t.Cleanup(func() { f.Close() })
		return k
	}
	t.Fatal("netnshost: all 99 sets are leased by other tests")
	return 0
}
