package store

import (
	"strings"
	"testing"
)

// FuzzResolve: no store URL makes Open's parsing panic; a plain path
// goes to the embedded store, a URL to its scheme's backend, and no error
// shows the password a URL carries.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"file:///tmp/x", "file://localhost/tmp/x", "file://host/x", "file://", "dir", "",
		"redis://127.0.0.1:6379/0?prefix=p:", "redis://:pw@[::1]:6379/0", "postgres://u@h:5432/db?table=t",
		"REDIS://h/0", "x://", "://", "redis://h:99999999999999999999/", "redis://%zz@h/", "redis://u:p@h:p/",
	} {
		f.Add(s, "sprout")
	}
	f.Fuzz(func(t *testing.T, raw, pw string) {
		open, u, err := resolve(raw)
		switch {
		case err != nil:
		case !strings.Contains(raw, "://"):
			if u != nil || open != nil {
				t.Fatalf("plain path %q resolved to a URL", raw)
			}
		case u == nil || open == nil:
			t.Fatalf("%q: no URL or no backend, and no error", raw)
		case u.Scheme == "file":
			if dir, err := fileURLPath(u); err == nil && dir == "" {
				t.Fatalf("%q: empty file path", raw)
			}
		}
		// The same URL with a password in it.
		// A password of letters g-w: no escape (%20, \x00, \u00e9) an
		// error's quoting adds can spell it.
		if len(pw) < 6 || strings.Contains(raw, pw) || strings.ContainsFunc(pw, func(r rune) bool {
			return r < 'g' || r > 'w'
		}) {
			return
		}
		scheme, rest, ok := strings.Cut(raw, "://")
		if !ok {
			scheme, rest = "redis", raw
		}
		withPW := scheme + "://u:" + pw + "@" + rest
		_, u, err = resolve(withPW)
		if err == nil && u.Scheme == "file" {
			_, err = fileURLPath(u)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("%q: error %q shows the password", withPW, err)
		}
	})
}
