// Package redact hides secrets before anything is written or printed:
// header values that carry credentials, the user info of a URL, query
// parameters named like a secret and the password of a store URL appear
// as Mark instead (docs/secrets.md).
package redact

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/stampede-dev/stampede/internal/redact/names"
)

// Mark replaces every secret value.
const Mark = "<redacted>"

// DefaultHeaders are the header names whose values are always secret.
var DefaultHeaders = slices.Clone(names.DefaultHeaders)

// Words are the parts of a name that make it secret: a header or a query
// parameter whose name holds one of them (case-insensitive, as a
// substring: access_token, api_key, X-Api-Key, client_secret) has its
// value written as Mark. A program may append to it before anything is
// written; docs/secrets.md lists the defaults (names.Words).
var Words = slices.Clone(names.Words)

// NotSecret are parts of a name that make it not secret though it holds
// one of Words: an Idempotency-Key names a request, not a credential.
var NotSecret = slices.Clone(names.NotSecret)

// IsSecretName reports whether name holds one of Words and none of
// NotSecret, without regard to case.
func IsSecretName(name string) bool { return names.Match(name, Words, NotSecret) }

// IsSecretHeader reports whether the header name carries a secret: one of
// DefaultHeaders or of extra (compared without regard to case), or a name
// holding one of Words (IsSecretName).
func IsSecretHeader(name string, extra []string) bool {
	eq := func(s string) bool { return strings.EqualFold(s, name) }
	return slices.ContainsFunc(DefaultHeaders, eq) || slices.ContainsFunc(extra, eq) || IsSecretName(name)
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

// HeaderLine returns a header written as one line ("Name: value", as a
// user gives it to -H) with its value replaced by Mark when the name is
// secret (IsSecretHeader); any other text unchanged.
func HeaderLine(line string, extra []string) string {
	name, _, ok := strings.Cut(line, ":")
	if !ok || strings.ContainsAny(name, " \t/?@") || name == "" {
		return line
	}
	if IsSecretHeader(name, extra) {
		return name + ": " + Mark
	}
	return line
}

// URL returns raw with its user info (user name and password) and the
// value of every query parameter whose name is secret (IsSecretName)
// replaced by Mark: redis://:pw@host, postgres://u:pw@host,
// https://host/?access_token=t and nats://host?password=pw all lose their
// secret. A URL without any is returned unchanged; one that does not
// parse is returned whole as Mark when it might hold a secret (an '@' or
// a secret-looking query), unchanged otherwise.
func URL(raw string) string {
	return URLWith(raw, nil)
}

// URLWith is URL that also hides the query parameters named in extra
// (compared without regard to case).
func URLWith(raw string, extra []string) string {
	at := strings.Contains(raw, "@")
	_, query, hasQuery := strings.Cut(raw, "?")
	if !at && (!hasQuery || !secretQuery(query, extra)) {
		return raw
	}
	// A URL redacted before parses again: the mark escaped, as url
	// would write it, and restored below.
	u, err := url.Parse(strings.ReplaceAll(raw, Mark, escapedMark))
	if err != nil {
		return Mark
	}
	changed := false
	if u.User != nil {
		u.User = url.User(Mark)
		changed = true
	}
	if u.RawQuery != "" {
		if q, ok := redactQuery(u.RawQuery, extra); ok {
			u.RawQuery = q
			changed = true
		}
	}
	if !changed {
		return raw
	}
	// url.User escapes '<' and '>'; the mark reads better as is.
	return strings.ReplaceAll(u.String(), escapedMark, Mark)
}

// escapedMark is Mark as a URL's user info holds it.
var escapedMark = url.PathEscape(Mark)

// secretName is IsSecretName or one of extra.
func secretName(name string, extra []string) bool {
	return IsSecretName(name) || slices.ContainsFunc(extra, func(s string) bool { return strings.EqualFold(s, name) })
}

// secretQuery reports whether a raw query holds a secret parameter.
func secretQuery(q string, extra []string) bool {
	_, ok := redactQuery(q, extra)
	return ok
}

// redactQuery replaces the values of q's secret parameters by Mark,
// keeping the order and spelling of the others; ok is false when there
// were none.
func redactQuery(q string, extra []string) (string, bool) {
	parts := strings.Split(q, "&")
	ok := false
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if name != "" && secretName(name, extra) {
			parts[i] = k + "=" + Mark
			ok = true
		}
	}
	return strings.Join(parts, "&"), ok
}

// Values returns the secret strings of h (the values of its secret
// headers) and of the URLs (user name, password and secret query
// parameters), for a caller that must make sure none of them appears in a
// text it writes (Scrub). Strings shorter than MinScrub are left out:
// scrubbed wherever they appear, a user name "u" would cut every u out of
// a text (their own places, the URL's user info or the header's value,
// are hidden all the same). A value "Bearer T" yields T too, so the token
// is found without its scheme.
func Values(h http.Header, extra []string, urls ...string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= MinScrub && v != Mark && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for k, vs := range h {
		if IsSecretHeader(k, extra) {
			for _, v := range vs {
				add(strings.TrimSpace(v))
				if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
					add(strings.TrimSpace(cred))
				}
			}
		}
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			add(u.User.Username())
		}
		for name, vs := range u.Query() {
			if secretName(name, extra) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	return out
}

// MinScrub is the length below which Values leaves a secret out.
const MinScrub = 3

// Body returns a request body as given on a command line (--data) with
// the values of its secret fields replaced by Mark: in a JSON text, every
// string under a key that names a secret (as Policy.JSON hides them); in
// a form (a=1&password=x), every field whose name is secret
// (IsSecretName, or one of extra). A JSON-looking text that does not
// parse is Mark whole; any other text is returned unchanged.
func Body(s string, extra []string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		b, err := Policy{Headers: extra}.JSON([]byte(t))
		if err != nil {
			return Mark
		}
		return string(b)
	}
	if strings.Contains(s, "=") {
		if q, ok := redactQuery(s, extra); ok {
			return q
		}
	}
	return s
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
