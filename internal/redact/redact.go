// Package redact hides secrets before anything is written or printed:
// header values that carry credentials, the user info of a URL and the
// password of a store URL appear as Mark instead (docs/drill.md
// "Secrets").
package redact

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Mark replaces every secret value.
const Mark = "<redacted>"

// DefaultHeaders are the header names whose values are always secret.
var DefaultHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// IsSecretHeader reports whether the header name carries a secret: one of
// DefaultHeaders or of extra, compared without regard to case.
func IsSecretHeader(name string, extra []string) bool {
	eq := func(s string) bool { return strings.EqualFold(s, name) }
	return slices.ContainsFunc(DefaultHeaders, eq) || slices.ContainsFunc(extra, eq)
}

// Header returns a copy of h with the value of every secret header (see
// IsSecretHeader) replaced by Mark; nil for nil.
func Header(h http.Header, extra []string) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for k, vs := range out {
		if IsSecretHeader(k, extra) {
			for i := range vs {
				vs[i] = Mark
			}
		}
	}
	return out
}

// URL returns raw with its user info (user name and password) replaced by
// Mark. A URL without user info is returned unchanged; one that does not
// parse is returned whole as Mark when it might hold user info (an '@'),
// unchanged otherwise.
func URL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Mark
	}
	if u.User == nil {
		return raw
	}
	u.User = url.User(Mark)
	// url.User escapes '<' and '>'; the mark reads better as is.
	return strings.Replace(u.String(), url.PathEscape(Mark), Mark, 1)
}

// Values returns the secret strings of h (the values of its secret headers)
// and of the URLs' user info, for a caller that must make sure none of them
// appears in a text it writes (Scrub). Empty strings are left out.
func Values(h http.Header, extra []string, urls ...string) []string {
	var out []string
	for k, vs := range h {
		if IsSecretHeader(k, extra) {
			for _, v := range vs {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p)
			}
			if n := u.User.Username(); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// Scrub replaces every occurrence of each secret in s by Mark.
func Scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, Mark)
		}
	}
	return s
}
