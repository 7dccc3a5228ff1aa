package spec

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
)

// CheckURL parses raw as the URL of field and checks what can be checked
// without the network: it parses, its scheme is one of schemes, it has a
// host, and its port (if given) is a number from 1 to 65535. The error is
// a *FieldError on field.
func CheckURL(field, raw string, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, Errorf(field, "missing")
	case len(schemes) > 0 && NoScheme(raw):
		return nil, SchemeHint(field, raw, schemes[0])
	case err != nil:
		return nil, Errorf(field, "%q does not parse", redact.URL(raw))
	case !slices.Contains(schemes, u.Scheme):
		return nil, Errorf(field, "scheme must be %s, got %q", orList(schemes), u.Scheme)
	case u.Hostname() == "":
		return nil, Errorf(field, "no host in %q", redact.URL(raw))
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, Errorf(field, "port %q is out of range: want 1 to 65535", p)
		}
	}
	return u, nil
}

// ResolveTimeout bounds CheckResolves: a fixed bound, no knob.
const ResolveTimeout = 5 * time.Second

// CheckResolves looks up the host of u (a name; an address literal needs
// no lookup) and returns a *FieldError on field when it does not resolve,
// so that a run is refused before any socket opens rather than failing
// every attempt as dns for its whole duration.
func CheckResolves(ctx context.Context, field string, u *url.URL) error {
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		why := "no address"
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			why = "no such host"
		case err != nil:
			why = err.Error()
		}
		return Errorf(field, "host %s does not resolve (%s)", host, why)
	}
	return nil
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// NoScheme reports whether raw, a URL as a user wrote it, lacks the
// "scheme://" it needs ("localhost:9001").
func NoScheme(raw string) bool { return raw != "" && !strings.Contains(raw, "://") }

// SchemeHint is the error for a URL without a scheme: one line that shows
// it written with scheme ("ws://localhost:9001/").
func SchemeHint(field, raw, scheme string) error {
	fixed := scheme + "://" + strings.TrimPrefix(raw, "//")
	if !strings.Contains(strings.TrimPrefix(fixed, scheme+"://"), "/") {
		fixed += "/"
	}
	return Errorf(field, "%q has no scheme: write %s", redact.URL(raw), redact.URL(fixed))
}
