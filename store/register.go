package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// OpenFunc opens a backend's store at u, whose scheme chose the backend.
// Open calls it with opt already validated and defaulted
// (Options.WithDefaults).
type OpenFunc func(ctx context.Context, u *url.URL, opt Options) (Store, error)

// ErrBackendNotLinked is wrapped by Open's error for a URL whose scheme
// belongs to a backend this binary does not import (see linkedBy): the
// lean loadgen agent, cmd/stampede-worker, is built without Redis and
// PostgreSQL.
var ErrBackendNotLinked = errors.New("store: backend not linked into this binary")

var (
	backendsMu sync.RWMutex
	// backends maps a URL scheme to its opener; the embedded store's is
	// built in, the others come from Register.
	backends = map[string]OpenFunc{"file": openFileURL}
)

// linkedBy names the package that registers each scheme of this
// repository's networked backends, for the error of a binary built
// without it.
var linkedBy = map[string]string{
	"redis":      "github.com/stampede-dev/stampede/store/redisstore",
	"postgres":   "github.com/stampede-dev/stampede/store/pgstore",
	"postgresql": "github.com/stampede-dev/stampede/store/pgstore",
	"nats":       "github.com/stampede-dev/stampede/store/jsstore",
	"jetstream":  "github.com/stampede-dev/stampede/store/jsstore",
}

// Register makes the backend open available to Open for URLs of scheme
// (lower case, without "://"). A backend package calls it from its init,
// so importing the package, even as `import _ "..."`, links the backend
// in. Register is safe for concurrent use; it panics if open is nil, the
// scheme is empty or not lower case, or the scheme is registered already
// ("file" always is), as database/sql.Register does for a driver name.
func Register(scheme string, open OpenFunc) {
	if open == nil {
		panic("store: Register of scheme " + scheme + " with a nil OpenFunc")
	}
	if scheme == "" || scheme != strings.ToLower(scheme) || strings.Contains(scheme, ":") {
		panic(fmt.Sprintf("store: Register of a bad scheme %q (want lower case, without \"://\")", scheme))
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	backends[scheme] = open
}

// Schemes returns the URL schemes Open accepts in this binary, sorted.
func Schemes() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	s := make([]string, 0, len(backends))
	for k := range backends {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// backend returns the opener registered for u's scheme. Its errors show u
// without a password.
func backend(u *url.URL) (OpenFunc, error) {
	scheme := u.Scheme
	backendsMu.RLock()
	open := backends[scheme]
	backendsMu.RUnlock()
	if open != nil {
		return open, nil
	}
	if pkg, ok := linkedBy[scheme]; ok {
		return nil, fmt.Errorf("%w: %q needs the %s backend, which this binary was built without (package %s registers it; the stampede binary has it, stampede-worker does not)",
			ErrBackendNotLinked, shown(u), scheme, pkg)
	}
	return nil, fmt.Errorf("store: unknown scheme %q in %q (want one of %s)", scheme, shown(u), strings.Join(Schemes(), ", "))
}
