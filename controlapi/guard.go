// Package controlapi keeps the HTTP control APIs of `stampede target` and
// `stampede proxy` for whoever started the process (docs/cli.md, "Control
// API"): a random token printed in the ready line, a Host header naming the
// address the API listens on, and no cross-origin requests. A web page in a
// browser on the same machine can reach 127.0.0.1, and DNS rebinding can
// make it look same-origin; the Host check stops the second, the Origin
// check the first, the token everyone else.
package controlapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// NewToken returns a fresh token: 32 random bytes, hex-encoded.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never returns an error (crypto/rand)
	return hex.EncodeToString(b)
}

// Header is the request header that carries the token, as
// "Authorization: Bearer TOKEN".
const Header = "Authorization"

// SetToken adds the token to a request for a control API.
func SetToken(r *http.Request, token string) {
	r.Header.Set(Header, "Bearer "+token)
}

// Guard returns h behind the checks of the control API listening on addr
// (host:port as bound, e.g. "127.0.0.1:4123" or "[::]:4123"), in this
// order:
//
//   - 421 Misdirected Request when the Host header is not addr, or
//     localhost, 127.0.0.1 or [::1] with addr's port; a listener on an
//     unspecified address (0.0.0.0, [::]) takes any IP literal with its
//     port, never a name other than localhost;
//   - 403 Forbidden when an Origin header is present and is not
//     http://HOST of the request, or Sec-Fetch-Site says cross-site;
//   - 401 Unauthorized when the Authorization header is not
//     "Bearer TOKEN" (compared in constant time).
//
// An empty token is refused: Guard panics, since an open API is a bug.
func Guard(h http.Handler, addr, token string) http.Handler {
	if token == "" {
		panic("controlapi: empty token")
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r.Host, addr) {
			http.Error(w, "control API: Host "+quote(r.Host)+" is not this API's address", http.StatusMisdirectedRequest)
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "control API: cross-origin requests are refused", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(Header)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stampede control"`)
			http.Error(w, "control API: missing or wrong token (Authorization: Bearer TOKEN, the ready line's \"token\")", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether host (a Host header) names the API bound to
// addr.
func HostAllowed(host, addr string) bool {
	bh, bport, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	hh, hport, err := net.SplitHostPort(host)
	if err != nil || hport != bport {
		return false
	}
	if strings.EqualFold(hh, "localhost") {
		return true
	}
	hip := net.ParseIP(hh)
	if hip == nil {
		return false // a name: DNS rebinding would pass as same-origin
	}
	if hip.IsLoopback() {
		return true
	}
	bip := net.ParseIP(bh)
	return bip != nil && (bip.IsUnspecified() || bip.Equal(hip))
}

// SameOrigin reports whether r comes from no page or from the page's own
// origin: the Origin check of Guard, for a server that takes its token
// another way (the live page's cookie).
func SameOrigin(r *http.Request) bool { return sameOrigin(r) }

// sameOrigin reports whether r comes from no page or from the API's own
// origin.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && strings.EqualFold(u.Host, r.Host)
}

// Loopback reports whether addr (host:port to bind) binds only loopback
// interfaces: 127.0.0.0/8, ::1 or localhost. An empty host binds every
// interface.
func Loopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return `"` + s + `"`
}

// NewRequest returns a request for a control API that carries token.
func NewRequest(ctx context.Context, method, url, token string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	SetToken(req, token)
	return req, nil
}
