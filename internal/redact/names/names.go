// Package names holds what makes a name secret (docs/secrets.md): the
// default lists of internal/redact, in a package that imports nothing but
// strings, so that a process can hide the secrets of its own command line
// from its first moments (internal/argvsecret), before the packages that
// take long to initialise.
package names

import "strings"

// DefaultHeaders are the header names whose values are always secret.
var DefaultHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// Words are the parts of a name that make it secret, matched as a
// substring without regard to case: access_token, api_key, X-Api-Key,
// client_secret; STOMP's login and passcode.
var Words = []string{"token", "key", "secret", "password", "passwd", "auth", "signature", "credential", "passcode", "login"}

// NotSecret are parts of a name that make it not secret though it holds
// one of Words: an Idempotency-Key names a request, not a credential.
var NotSecret = []string{"idempotency"}

// Match reports whether name holds one of words and none of not, without
// regard to case.
func Match(name string, words, not []string) bool {
	n := strings.ToLower(name)
	for _, w := range not {
		if w != "" && strings.Contains(n, strings.ToLower(w)) {
			return false
		}
	}
	for _, w := range words {
		if w != "" && strings.Contains(n, strings.ToLower(w)) {
			return true
		}
	}
	return false
}
