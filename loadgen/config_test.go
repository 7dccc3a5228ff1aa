package loadgen

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/spec"
)

func TestValidate(t *testing.T) {
	ok := Config{Client: spec.Client{URL: "ws://127.0.0.1:9000/ws", Clients: 10}}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"wss", func(c *Config) { c.URL = "wss://localhost/" }, ""},
		{"everything", func(c *Config) {
			c.Ramp, c.MaxInflight, c.SynRetries, c.Mode, c.MsgRate, c.MsgSize = 100, 10, 2, spec.ModeEcho, 5, 64
			c.Header = http.Header{"Authorization": {"Bearer t"}}
			c.Protocols = []string{"chat"}
			c.SourceIPs = []netip.Addr{netip.MustParseAddr("127.0.0.2")}
		}, ""},
		{"no URL", func(c *Config) { c.URL = "" }, "URL"},
		{"http URL", func(c *Config) { c.URL = "http://127.0.0.1/" }, "URL"},
		{"no host", func(c *Config) { c.URL = "ws:///x" }, "URL"},
		{"no clients", func(c *Config) { c.Clients = 0 }, "Clients"},
		{"IDs overflow", func(c *Config) { c.FirstID = 1<<32 - 5 }, "Clients"},
		{"negative ramp", func(c *Config) { c.Ramp = -1 }, "Ramp"},
		{"negative timeout", func(c *Config) { c.ConnectTimeout = -time.Second }, "ConnectTimeout"},
		{"syn retries", func(c *Config) { c.SynRetries = 200 }, "SynRetries"},
		{"mode", func(c *Config) { c.Mode = "chat" }, "Mode"},
		{"tiny message", func(c *Config) { c.MsgSize = 10 }, "MsgSize"},
		{"reserved header", func(c *Config) { c.Header = http.Header{"Sec-Websocket-Key": {"x"}} }, "Header"},
		{"header injection", func(c *Config) { c.Header = http.Header{"X-A": {"1\r\nX-B: 2"}} }, "Header"},
		{"source family", func(c *Config) { c.SourceIPs = []netip.Addr{netip.MustParseAddr("::1")} }, "SourceIPs"},
		{"bad subprotocol", func(c *Config) { c.Protocols = []string{"a b"} }, "Protocols"},
		{"reactors", func(c *Config) { c.Reactors = 1000 }, "Reactors"},
		{"stampede", func(c *Config) {
			c.Mode, c.Rooms, c.NoResume, c.NoRetryQueue, c.QuietPeriod = spec.ModeStampede, 200, true, true, time.Second
		}, ""},
		{"stampede over wss", func(c *Config) { c.Mode, c.URL = spec.ModeStampede, "wss://localhost/" }, "Mode"},
		{"stampede body over a frame", func(c *Config) { c.Mode, c.MsgSize = spec.ModeStampede, spec.MaxProtocolBody+1 }, "MsgSize"},
		{"negative rooms", func(c *Config) { c.Mode, c.Rooms = spec.ModeStampede, -1 }, "Rooms"},
		{"negative quiet period", func(c *Config) { c.QuietPeriod = -time.Second }, "QuietPeriod"},
		{"rooms without stampede", func(c *Config) { c.Mode, c.Rooms = spec.ModeEcho, 5 }, "Rooms"},
		{"no resume without stampede", func(c *Config) { c.NoResume = true }, "NoResume"},
		{"no retry queue without stampede", func(c *Config) { c.NoRetryQueue = true }, "NoRetryQueue"},
		{"histogram intervals of 250 ms", func(c *Config) { c.HistInterval = 250 * time.Millisecond }, ""},
		{"histogram intervals below a tick", func(c *Config) { c.HistInterval = 50 * time.Millisecond }, "HistInterval"},
		{"histogram intervals not in ms", func(c *Config) { c.HistInterval = time.Second + time.Microsecond }, "HistInterval"},
		{"negative histogram intervals", func(c *Config) { c.HistInterval = -time.Second }, "HistInterval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			var ce *spec.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != "Client."+tc.field):
				t.Errorf("error %v, want one about %s", err, tc.field)
			}
		})
	}
	bad := ok
	bad.Policy = backoff.Policy{Jitter: 2}
	var ie *backoff.InvalidError
	if err := bad.Validate(); !errors.As(err, &ie) {
		t.Errorf("invalid policy: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	c := Config{Client: spec.Client{URL: "ws://127.0.0.1/", Clients: 3}}.withDefaults()
	if c.MaxInflight != spec.DefaultMaxInflight || c.ConnectTimeout != spec.DefaultConnectTimeout ||
		c.HandshakeTimeout != spec.DefaultHandshakeTimeout || c.Mode != spec.ModeNone || c.MsgSize != spec.DefaultMsgSize ||
		c.Reactors < 1 || c.Reactors > 3 || c.RetryAfterCap != spec.DefaultRetryAfterCap {
		t.Errorf("defaults %+v", c)
	}
}

func TestParseSourceIPs(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want: the addresses joined by spaces, or "error"
	}{
		{"empty", "", ""},
		{"list", "127.0.0.2, 127.0.0.3", "127.0.0.2 127.0.0.3"},
		{"range", "127.0.0.2-127.0.0.5", "127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5"},
		{"range across an octet", "127.0.0.254-127.0.1.1", "127.0.0.254 127.0.0.255 127.0.1.0 127.0.1.1"},
		{"mixed", "127.0.0.9,127.0.0.2-127.0.0.3", "127.0.0.9 127.0.0.2 127.0.0.3"},
		{"IPv6 range", "::1-::2", "::1 ::2"},
		{"reversed range", "127.0.0.5-127.0.0.2", "error"},
		{"mixed families", "127.0.0.1-::2", "error"},
		{"not an address", "localhost", "error"},
		{"too many", "10.0.0.0-10.1.0.0", "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ips, err := ParseSourceIPs(tc.in)
			got := "error"
			if err == nil {
				s := make([]string, len(ips))
				for i, ip := range ips {
					s[i] = ip.String()
				}
				got = strings.Join(s, " ")
			}
			if got != tc.want {
				t.Errorf("ParseSourceIPs(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestConfigJSON: a Config survives the JSON trip to a worker process.
func TestConfigJSON(t *testing.T) {
	in := Config{Client: spec.Client{URL: "ws://127.0.0.1:9000/ws", Clients: 10,
		Ramp: 100, Policy: backoff.MustParse("exp:initial=100ms,max=5s,jitter=0.5,spread=100ms-500ms"), Seed: 9,
		SourceIPs: []netip.Addr{netip.MustParseAddr("127.0.0.2")}, ConnectTimeout: time.Second, SynRetries: 2,
		Header: http.Header{"Authorization": {"Bearer t"}}, Protocols: []string{"chat"}, Mode: spec.ModeEcho, MsgRate: 2}, FirstID: 5, Start: time.Unix(1700000000, 5).UTC(),

		OnRetry: func(Retry) {},
	}
	// The stampede mode's fields travel too (a second config: Validate
	// would refuse them in echo mode, the trip does not care).
	st := in
	st.Mode, st.Rooms, st.QuietPeriod, st.NoResume, st.NoRetryQueue = spec.ModeStampede, 200, 3*time.Second, true, true
	for _, in := range []Config{in, st} {
		roundTrip(t, in)
	}
}

func roundTrip(t *testing.T, in Config) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	in.OnRetry = nil
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n%+v\n%+v\n%s", in, out, b)
	}
}
