package store_test

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stampede-dev/stampede/store"
)

// TestOpenWithoutBackend: this test binary imports neither redisstore nor
// pgstore, as cmd/stampede-worker does not, so their URLs fail with
// ErrBackendNotLinked and an error naming the package, without echoing
// a password.
func TestOpenWithoutBackend(t *testing.T) {
	for _, tc := range []struct {
		url, pkg string
	}{
		{"redis://:secret@127.0.0.1:6379/0", "store/redisstore"},
		{"postgres://postgres:secret@127.0.0.1:5432/test", "store/pgstore"},
		{"postgresql://postgres@127.0.0.1:5432/test", "store/pgstore"},
	} {
		_, err := store.Open(context.Background(), tc.url, store.Options{})
		if !errors.Is(err, store.ErrBackendNotLinked) {
			t.Fatalf("Open(%q) = %v, want ErrBackendNotLinked", tc.url, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "built without") || !strings.Contains(msg, tc.pkg) || strings.Contains(msg, "secret") {
			t.Errorf("Open(%q) error %q: want it to say the binary was built without %s, and no password", tc.url, msg, tc.pkg)
		}
	}
	for _, scheme := range store.Schemes() {
		if scheme == "redis" || strings.HasPrefix(scheme, "postgres") {
			t.Errorf("Schemes() = %v: %s registered by a binary that imports no backend", store.Schemes(), scheme)
		}
	}
}

// schemeN numbers the schemes the tests register, which stay registered
// for the life of the test binary (-count=N runs a test again).
var schemeN atomic.Int64

// testScheme returns a scheme no test registered before.
func testScheme(prefix string) string {
	return prefix + strconv.FormatInt(schemeN.Add(1), 10)
}

// TestRegister: a registered scheme reaches its OpenFunc with validated,
// defaulted options and the parsed URL, from concurrent Opens.
func TestRegister(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var got []store.Options
	scheme := testScheme("memtest")
	store.Register(scheme, func(ctx context.Context, u *url.URL, opt store.Options) (store.Store, error) {
		mu.Lock()
		got = append(got, opt)
		mu.Unlock()
		return store.OpenFile(filepath.Join(dir, u.Host), opt)
	})
	if !slices.Contains(store.Schemes(), scheme) {
		t.Fatalf("Schemes() = %v, want %s in it", store.Schemes(), scheme)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s, err := store.Open(context.Background(), scheme+"://d"+strconv.Itoa(i), store.Options{NoDedupe: true})
			if err != nil {
				t.Errorf("Open memtest: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	want := store.Options{NoDedupe: true}.WithDefaults()
	if len(got) != 4 || got[0] != want {
		t.Fatalf("OpenFunc saw options %+v, want 4 times %+v", got, want)
	}
	if _, err := store.Open(context.Background(), scheme+"://x", store.Options{Retention: -1}); err == nil {
		t.Fatal("negative retention reached the backend")
	}
}

// TestRegisterPanics: like database/sql.Register, a duplicate scheme
// (the built-in file one included), a nil OpenFunc or a malformed scheme
// is a programming error.
func TestRegisterPanics(t *testing.T) {
	open := func(context.Context, *url.URL, store.Options) (store.Store, error) { return nil, nil }
	for _, tc := range []struct {
		name   string
		scheme string
		open   store.OpenFunc
	}{
		{"the built-in file scheme", "file", open},
		{"a nil OpenFunc", "nilopen", nil},
		{"an empty scheme", "", open},
		{"an upper-case scheme", "Redis", open},
		{"a scheme with its separator", "x://", open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", tc.scheme)
				}
			}()
			store.Register(tc.scheme, tc.open)
		})
	}
	dup := testScheme("duptest")
	store.Register(dup, open)
	defer func() {
		if recover() == nil {
			t.Errorf("second Register(%s) did not panic", dup)
		}
	}()
	store.Register(dup, open)
}
