package spec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/session"
)

// TestFieldErrorRender: a field error names its field and the fields its
// reason names as the caller says; a reason led by its own field is the
// whole message.
func TestFieldErrorRender(t *testing.T) {
	flag := func(f string) string { return "--" + strings.ToLower(f[strings.Index(f, ".")+1:]) }
	for _, tc := range []struct {
		name string
		err  *FieldError
		path string // Error()
		flag string // Render(flag)
	}{
		{"plain", &FieldError{Field: "Server.Backlog", Reason: "must not be negative, got -1"},
			"Server.Backlog: must not be negative, got -1", "--backlog: must not be negative, got -1"},
		{"names another", &FieldError{Field: "Server.NoDedupe", Reason: "needs {Server.Store}"},
			"Server.NoDedupe: needs Server.Store", "--nodedupe: needs --store"},
		{"leads with itself", &FieldError{Field: "Hub.TLSCert", Reason: "{Hub.TLSCert} and {Hub.TLSKey}: give both"},
			"Hub.TLSCert and Hub.TLSKey: give both", "--tlscert and --tlskey: give both"},
	} {
		if got := tc.err.Error(); got != tc.path {
			t.Errorf("%s: Error() = %q, want %q", tc.name, got, tc.path)
		}
		if got := tc.err.Render(flag); got != tc.flag {
			t.Errorf("%s: Render = %q, want %q", tc.name, got, tc.flag)
		}
	}
}

// TestClientValidate: each check names its field; a policy's own error
// stays reachable.
func TestClientValidate(t *testing.T) {
	ok := Client{URL: "ws://127.0.0.1:1/", Clients: 10}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Client)
	}{
		{"Client.URL", func(c *Client) { c.URL = "http://x/" }},
		{"Client.Clients", func(c *Client) { c.Clients = 0 }},
		{"Client.SynRetries", func(c *Client) { c.SynRetries = MaxSynRetries + 1 }},
		{"Client.MsgSize", func(c *Client) { c.MsgSize = MinMsgSize - 1 }},
		{"Client.Rooms", func(c *Client) { c.Rooms = 5 }},
		{"Client.TLSCAFile", func(c *Client) { c.TLSCAFile = "ca.pem" }},
		{"Client.Session.Protocol", func(c *Client) { c.Session.Protocol = "xmpp" }},
		{"Client.Session.Protocol", func(c *Client) { c.Session.Protocol, c.Mode = session.SocketIO, ModeEcho }},
		{"Client.Session.MQTT.QoS", func(c *Client) { c.Session.MQTT.QoS = 2 }},
		{"Client.Policy", func(c *Client) { c.Policy, _ = backoff.Parse("actioncable") }},
	} {
		c := ok
		tc.edit(&c)
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: Validate = %v", tc.field, err)
		}
	}
	c := ok
	c.Session.Protocol, c.URL = session.MQTT, "wss://127.0.0.1:1/"
	if err := c.Validate(); err != nil {
		t.Errorf("a session protocol on wss://: %v", err)
	}
	c = ok
	c.Policy, _ = backoff.Parse("actioncable")
	c.Session.Protocol = session.ActionCable
	if err := c.Validate(); err != nil {
		t.Errorf("the actioncable preset speaking its protocol: %v", err)
	}
	c = ok
	c.Policy = backoff.Policy{Jitter: 2}
	var ie *backoff.InvalidError
	if err := c.Validate(); !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "Client.Policy: ") {
		t.Errorf("policy: %v", err)
	}
}

// TestServerValidate: a zero spec is valid; each check names its field.
func TestServerValidate(t *testing.T) {
	if err := (Server{}).Validate(); err != nil {
		t.Fatalf("zero spec: %v", err)
	}
	for _, tc := range []struct {
		field string
		s     Server
	}{
		{"Server.Backlog", Server{Backlog: -1}},
		{"Server.AcceptRate", Server{AcceptRate: -1}},
		{"Server.NoDedupe", Server{NoDedupe: true}},
		{"Server.HandshakeCost", Server{HandshakeCost: 6 * time.Second}},
		{"Server.Addr", Server{Addr: "example.com:80"}},
		{"Server.Procs", Server{Procs: -1}},
		{"Server.Procs", Server{Procs: MaxProcs + 1}},
	} {
		var fe *FieldError
		if err := tc.s.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: Validate = %v", tc.field, err)
		}
	}
}

// TestClientJSON: a spec crosses a plan whole: every field survives the
// JSON an agent's plan carries.
func TestClientJSON(t *testing.T) {
	in := Client{URL: "ws://127.0.0.1:1/", Clients: 3, MsgRate: 2, Mode: ModeEcho, SynRetries: 2,
		PingInterval: time.Second, QuietPeriod: time.Second, HistInterval: time.Second, NoRetryAfter: true}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Client
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.URL != in.URL || out.Clients != in.Clients || out.MsgRate != in.MsgRate || out.Mode != in.Mode ||
		out.SynRetries != in.SynRetries || out.PingInterval != in.PingInterval || out.QuietPeriod != in.QuietPeriod ||
		out.HistInterval != in.HistInterval || out.NoRetryAfter != in.NoRetryAfter {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
}

// TestWithDefaults: a zero field means its default.
func TestWithDefaults(t *testing.T) {
	c := Client{Clients: 1}.WithDefaults()
	if c.ConnectTimeout != DefaultConnectTimeout || c.PongTimeout != DefaultPingInterval || c.Mode != ModeNone || c.MsgSize != DefaultMsgSize {
		t.Errorf("client defaults: %+v", c)
	}
	s := Server{}.WithDefaults()
	if s.Backlog != DefaultBacklog || s.HandshakeTimeout != DefaultServerHandshakeTimeout || s.LimitStatus != DefaultLimitStatus {
		t.Errorf("server defaults: %+v", s)
	}
}

// TestHTTPFleet: a zero rate is one request per client a second, zero
// durations their defaults; a negative value names its field.
func TestHTTPFleet(t *testing.T) {
	got := HTTPFleet{Clients: 20}.WithDefaults()
	want := HTTPFleet{Clients: 20, Rate: 20, Duration: DefaultHTTPDuration, Grace: DefaultHTTPGrace}
	if got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	if err := (HTTPFleet{Clients: 1}).Validate(); err != nil {
		t.Errorf("zero rate and durations: %v", err)
	}
	for _, tc := range []struct {
		field string
		s     HTTPFleet
	}{
		{"HTTPFleet.Clients", HTTPFleet{}},
		{"HTTPFleet.Rate", HTTPFleet{Clients: 1, Rate: -1}},
		{"HTTPFleet.Duration", HTTPFleet{Clients: 1, Duration: -1}},
		{"HTTPFleet.Grace", HTTPFleet{Clients: 1, Grace: -1}},
		{"HTTPFleet.Deadline", HTTPFleet{Clients: 1, Deadline: -1}},
	} {
		var fe *FieldError
		if err := tc.s.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: Validate = %v", tc.field, err)
		}
	}
}
