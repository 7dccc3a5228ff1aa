package target

import (
	"errors"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string // "" = valid
	}{
		{name: "zero value is valid", cfg: Config{}},
		{name: "IPv6 address", cfg: Config{Server: spec.Server{Addr: "[::1]:9000"}}},
		{name: "localhost", cfg: Config{Server: spec.Server{Addr: "localhost:0"}}},
		{name: "host name", cfg: Config{Server: spec.Server{Addr: "example.com:80"}}, wantField: "Addr"},
		{name: "no port", cfg: Config{Server: spec.Server{Addr: "127.0.0.1"}}, wantField: "Addr"},
		{name: "negative backlog", cfg: Config{Server: spec.Server{Backlog: -1}}, wantField: "Backlog"},
		{name: "negative accept rate", cfg: Config{Server: spec.Server{AcceptRate: -5}}, wantField: "AcceptRate"},
		{name: "negative hold", cfg: Config{Server: spec.Server{Hold: -time.Second}}, wantField: "Hold"},
		{name: "cert without key", cfg: Config{Server: spec.Server{CertFile: "c.pem"}}, wantField: "CertFile"},
		{name: "cost above default timeout", cfg: Config{Server: spec.Server{HandshakeCost: 6 * time.Second}}, wantField: "HandshakeCost"},
		{name: "cost below a longer timeout", cfg: Config{Server: spec.Server{HandshakeCost: 6 * time.Second, HandshakeTimeout: 10 * time.Second}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ce *spec.FieldError
			switch {
			case tc.wantField == "" && err != nil:
				t.Fatalf("Validate = %v; want nil", err)
			case tc.wantField != "" && (!errors.As(err, &ce) || ce.Field != "Server."+tc.wantField):
				t.Fatalf("Validate = %v; want a FieldError on %s", err, tc.wantField)
			}
		})
	}
}
