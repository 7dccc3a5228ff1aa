package drill

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
)

// TestCheckTarget: loopback hosts pass, any other host only when
// --allow-remote names it exactly; host names other than localhost are
// never resolved, so they are remote.
func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		url   string
		allow []string
		ok    bool
	}{
		{"ws://127.0.0.1:8080/ws", nil, true},
		{"ws://127.9.9.9/", nil, true}, // all of 127.0.0.0/8
		{"wss://[::1]:8443/", nil, true},
		{"ws://localhost:1/", nil, true},
		{"ws://LOCALHOST:1/", nil, true},
		{"ws://[::ffff:127.0.0.1]:1/", nil, true},
		{"ws://10.1.2.3/", nil, false},
		{"ws://10.1.2.3/", []string{"10.1.2.4"}, false},
		{"ws://10.1.2.3/", []string{"10.1.2.3"}, true},
		{"ws://user:pw@10.1.2.3:9/", []string{"10.1.2.3"}, true},
		{"wss://[fd00::2]:443/", []string{"[fd00::2]"}, true},
		{"wss://staging.example/", nil, false},
		{"wss://staging.example/", []string{"STAGING.example"}, true},
		{"ws://0.0.0.0/", nil, false},
		{"ws://localhost.evil.example/", nil, false},
	} {
		err := CheckTarget(tc.url, tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("CheckTarget(%q, %q) = %v; want ok %v", tc.url, tc.allow, err, tc.ok)
		}
	}
	err := CheckTarget("ws://bob:s3cr3t@10.1.2.3/", nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "\n") {
		t.Errorf("refusal %q: want one line without the password", err)
	}
}

func TestValidate(t *testing.T) {
	base := func() Config {
		return Config{Run: storm.Config{Duration: 10 * time.Second, Fleet: loadgen.Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1}}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"command", func(c *Config) { c.RestartCmd, c.At = "true", 5*time.Second }, ""},
		{"by hand", func(c *Config) { c.WaitForOutage = true }, ""},
		{"neither", func(c *Config) {}, "Drill.RestartCmd or Drill.WaitForOutage: one is required"},
		{"at with the wait", func(c *Config) { c.WaitForOutage, c.At = true, time.Second }, "Drill.At: only with Drill.RestartCmd"},
		{"at the end", func(c *Config) { c.RestartCmd, c.At = "true", 10*time.Second }, "Drill.At: 10s must fall inside Storm.Duration"},
		{"remote", func(c *Config) { c.WaitForOutage, c.Run.Fleet.URL = true, "ws://192.0.2.1/" }, "not loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v; want %q", err, tc.want)
			}
		})
	}
}
