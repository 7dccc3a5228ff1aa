package agent

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/stampede-dev/stampede/internal/redact"
)

// NamespaceHosts is the prefix of the network-namespace hosts the
// project's scripts create (scripts/hosts.sh: 10.203.K.0/24 for set K):
// loads to them are allowed, as to loopback, without being named.
var NamespaceHosts = netip.MustParsePrefix("10.203.0.0/16")

// LoadAllowed reports whether an agent may send load to host (a URL's
// host, without port or brackets): when it is loopback (or localhost), in
// NamespaceHosts, or named by an entry of allow: a host exactly (no name
// is resolved: a name other than localhost counts only when named) or an
// address prefix such as 10.244.0.0/16 holding it.
func LoadAllowed(host string, allow []string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err == nil {
		ip = ip.Unmap()
		if ip.IsLoopback() || NamespaceHosts.Contains(ip) {
			return true
		}
	}
	return slices.ContainsFunc(allow, func(a string) bool {
		if p, perr := netip.ParsePrefix(a); perr == nil {
			return err == nil && p.Contains(ip)
		}
		return strings.EqualFold(strings.Trim(a, "[]"), host)
	})
}

// ValidAllow checks the entries of an allow list: a host name, an
// address, or an address prefix (10.244.0.0/16).
func ValidAllow(allow []string) error {
	for _, a := range allow {
		if strings.Contains(a, "/") {
			if _, err := netip.ParsePrefix(a); err != nil {
				return fmt.Errorf("%q is neither a host nor an address prefix such as 10.244.0.0/16", a)
			}
			continue
		}
		if a == "" || strings.ContainsAny(a, ":@?#") && net.ParseIP(strings.Trim(a, "[]")) == nil {
			return fmt.Errorf("%q is not a host (give the host alone, without scheme or port)", a)
		}
	}
	return nil
}

// PlanLoadError is a plan an agent refused: it would send load (a
// loadgen share's URL, or a fault proxy's upstream) to a host that the
// coordinator's allow list in the plan (Plan.Allow) or the agent's own
// does not name.
type PlanLoadError struct {
	// Role is the plan's role.
	Role Role
	// Dest is the destination as shown (redacted).
	Dest string
	// Host is the destination's host.
	Host string
	// By says whose list lacks it: "coordinator" or "agent".
	By string
}

func (e *PlanLoadError) Error() string {
	return fmt.Sprintf("a %s plan sends load to %s: host %s is not loopback, not a namespace host (%s), and the %s's allow list does not name it",
		e.Role, e.Dest, e.Host, NamespaceHosts, e.By)
}

// CheckPlanLoad refuses a plan whose load goes to a host that the
// coordinator's list (p.Allow, signed with the plan) or the agent's own
// list (own) does not allow (LoadAllowed): both must. A coordinator, even
// one whose token leaked, so never sends an agent's load where the
// agent's operator did not allow it.
func CheckPlanLoad(p *Plan, own []string) error {
	var dest, host string
	switch {
	case p.Role == RoleLoadgen && p.Loadgen != nil:
		dest = p.Loadgen.URL
		u, err := url.Parse(dest)
		if err != nil || u.Hostname() == "" {
			return &PlanLoadError{Role: p.Role, Dest: redact.URL(dest), Host: "(none)", By: "agent"}
		}
		host, dest = u.Hostname(), redact.URL(dest)
	case p.Role == RoleProxy && p.Proxy != nil:
		dest = p.Proxy.Config.Upstream
		h, _, err := net.SplitHostPort(dest)
		if err != nil {
			h = dest
		}
		host = strings.Trim(h, "[]")
	default:
		return nil // a target group sends no load
	}
	if !LoadAllowed(host, p.Allow) {
		return &PlanLoadError{Role: p.Role, Dest: dest, Host: host, By: "coordinator"}
	}
	if !LoadAllowed(host, own) {
		return &PlanLoadError{Role: p.Role, Dest: dest, Host: host, By: "agent"}
	}
	return nil
}
