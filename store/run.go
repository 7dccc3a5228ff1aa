package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
)

// Dropper is implemented by a store that can remove everything it holds:
// the Redis backend's keys under its prefix, the PostgreSQL backend's
// tables. Drop is what ends a run that scoped its store (ForRun).
type Dropper interface {
	// Drop removes the store's data. The store stays open; only Close
	// follows.
	Drop(ctx context.Context) error
}

// ForRun scopes a store URL to one run: a redis:// URL without prefix=
// gets the prefix "stampede:RUNID:", a postgres:// one without table= the
// table "stampede_runid" (lower case, "-" as "_"), so the run's keys or
// rows are its own. owned reports that the run named the scope and should
// remove it when it ends (Drop): not when the URL has keep=1, nor when the
// user named the prefix or table (that data is the user's). Any other URL
// comes back as it is, not owned.
func ForRun(rawURL, runID string) (scoped string, owned bool, err error) {
	if !strings.Contains(rawURL, "://") {
		return rawURL, false, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false, badURL(rawURL, err)
	}
	var key, val string
	switch u.Scheme {
	case "redis":
		key, val = "prefix", "stampede:"+runID+":"
	case "postgres", "postgresql":
		key, val = "table", "stampede_"+strings.ReplaceAll(strings.ToLower(runID), "-", "_")
	default:
		return rawURL, false, nil
	}
	q := u.Query()
	if q.Get(key) != "" {
		return rawURL, false, nil
	}
	q.Set(key, val)
	u.RawQuery = q.Encode()
	return u.String(), !Keep(u.Query()), nil
}

// Keep reports a store URL's keep=1 (or keep=true): the run leaves its
// data in the store. The backends accept the parameter and ignore it.
func Keep(q url.Values) bool {
	k := q.Get("keep")
	return k == "1" || k == "true"
}

// Drop opens the store of rawURL and removes its data (Dropper). A store
// that cannot drop is left as it is.
func Drop(ctx context.Context, rawURL string) error {
	s, err := Open(ctx, rawURL, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	d, ok := s.(Dropper)
	if !ok {
		return nil
	}
	if err := d.Drop(ctx); err != nil {
		return fmt.Errorf("store: removing the run's data from %q: %w", redact.URL(rawURL), err)
	}
	return nil
}

// CheckTimeout bounds Check.
const CheckTimeout = 5 * time.Second

// Check tells, before a run opens any socket of its own, whether the store
// of rawURL can be opened: its scheme is known and linked, and a networked
// store answers (opened, pinged, closed within CheckTimeout). An embedded
// store (a path, file://, jetstream:///dir) is opened by the target group
// itself, which reports a bad one, so Check leaves it alone and the
// process that checks need not link its backend. The error is one line that starts with the
// URL without its query, its password hidden, and never quotes the
// password.
func Check(ctx context.Context, rawURL string) error {
	if !strings.Contains(rawURL, "://") {
		if err := checkPath(rawURL); err != nil {
			return err
		}
	}
	if embedded(rawURL) {
		return nil // started by the target group itself, in a folder of this host
	}
	_, u, err := resolve(rawURL)
	if err != nil || u == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	s, err := Open(ctx, rawURL, Options{})
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ") // Open scrubbed it
		at := *u
		at.RawQuery = "" // the server, not the options (nor the run's prefix)
		return fmt.Errorf("%s: %s", shown(&at), strings.TrimPrefix(msg, "store: "))
	}
	return s.Close()
}

// embedded reports a store the target group runs itself: a folder
// ("DIR" or file:///DIR) or the embedded JetStream (jetstream:///DIR).
// The process that checks a run's store need not link its backend.
func embedded(rawURL string) bool {
	if !strings.Contains(rawURL, "://") {
		return true
	}
	u, err := url.Parse(rawURL)
	return err == nil && (u.Scheme == "file" || u.Scheme == "jetstream")
}
