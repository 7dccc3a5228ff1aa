package storm

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestRedactedConfig: what summary.json records of a config hides header
// secrets, the URL's user info and the store's password, and leaves the
// config the run uses untouched.
func TestRedactedConfig(t *testing.T) {
	cfg := Config{
		Fleet: loadgen.Config{Client: spec.Client{URL: "wss://bob:pa55@127.0.0.1:9/ws", SecretHeaders: []string{"X-Api-Key"},
			Header: http.Header{"Authorization": {"Bearer s3cr3t"}, "X-Api-Key": {"k3y"}, "X-Trace": {"visible"}}}},
		Target: target.Config{Server: spec.Server{Store: "redis://:st0re@127.0.0.1:6379/0"}},
	}
	b, err := json.Marshal(runConfig{Config: cfg.redacted(), Target: redactedTarget(cfg.Target)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s3cr3t", "k3y", "pa55", "bob", "st0re"} {
		if strings.Contains(string(b), s) {
			t.Errorf("config holds %q: %s", s, b)
		}
	}
	if !strings.Contains(string(b), "visible") || !strings.Contains(string(b), "127.0.0.1:6379") {
		t.Errorf("config lost what is not secret: %s", b)
	}
	if cfg.Fleet.Header.Get("Authorization") != "Bearer s3cr3t" || cfg.Target.Store != "redis://:st0re@127.0.0.1:6379/0" || !strings.Contains(cfg.Fleet.URL, "pa55") {
		t.Errorf("the run's own config was changed: %+v", cfg)
	}
}
