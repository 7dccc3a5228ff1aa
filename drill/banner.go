package drill

import (
	"fmt"
	"io"
	"strings"

	"github.com/stampede-dev/stampede/internal/redact"
)

// InsecureWarning is printed on every run whose fleet does not verify the
// server's certificate (Client.TLSInsecure).
const InsecureWarning = "warning: insecure: the server's certificate is not verified; anyone on the path can read and change the fleet's traffic, tokens included"

// Banner writes what the drill is about to do, before any socket opens:
// the target (redacted), the client count, the connect rate, the duration
// and the caps the fleet never exceeds, and the deploy.
func Banner(w io.Writer, cfg *Config) {
	if w == nil {
		return
	}
	f := cfg.Run.Fleet
	rate := "all at once"
	if f.Ramp > 0 {
		rate = fmt.Sprintf("%g/s", f.Ramp)
	}
	inflight := f.Client.WithDefaults().MaxInflight
	var b strings.Builder
	fmt.Fprintf(&b, "drill: target %s\n", redact.URLWith(f.URL, f.SecretHeaders))
	fmt.Fprintf(&b, "drill: %d clients, first connects %s (at most %d in flight), duration %s, policy %s\n",
		f.Clients, rate, inflight, cfg.Run.Duration, f.Policy)
	fmt.Fprintf(&b, "drill: caps: at most %d connections open at once, load stops at %s or at once on Ctrl-C\n",
		f.Clients, cfg.Run.Duration)
	if cfg.RestartCmd != "" {
		run := cfg.Run
		run.SecretValues = append(run.SecretValues, redact.CommandValues(cfg.RestartCmd, f.SecretHeaders)...)
		cmd := redact.Scrub(redact.Command(cfg.RestartCmd, f.SecretHeaders), run.Secrets().Values)
		fmt.Fprintf(&b, "drill: deploy: `%s` at %s\n", cmd, cfg.At)
	} else {
		fmt.Fprintf(&b, "drill: waiting for an outage: deploy by hand during the run; it is detected from the clients' side\n")
	}
	if f.TLSInsecure {
		fmt.Fprintln(&b, InsecureWarning)
	}
	io.WriteString(w, b.String())
}
