package wsdial

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDialerValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Dialer
		want string // substring of the error; "" for valid
	}{
		{"zero value is valid", Dialer{}, ""},
		{"full config", Dialer{ConnectTimeout: time.Second, HandshakeTimeout: time.Second, SynRetries: 2,
			Header: http.Header{"Authorization": {"Bearer x"}}, Protocols: []string{"chat.v2"}}, ""},
		{"negative connect timeout", Dialer{ConnectTimeout: -1}, "ConnectTimeout"},
		{"negative handshake timeout", Dialer{HandshakeTimeout: -1}, "HandshakeTimeout"},
		{"syn retries above kernel max", Dialer{SynRetries: 128}, "SynRetries 128"},
		{"negative retry-after cap", Dialer{MaxRetryAfter: -1}, "MaxRetryAfter"},
		{"negative message size", Dialer{MaxMessageSize: -1}, "MaxMessageSize"},
		{"handshake-owned header", Dialer{Header: http.Header{"Sec-WebSocket-Key": {"x"}}}, `"Sec-WebSocket-Key" is set by the WebSocket handshake`},
		{"host header", Dialer{Header: http.Header{"host": {"x"}}}, `"host" is set by`},
		{"header value with newline", Dialer{Header: http.Header{"X-A": {"a\r\nX-B: b"}}}, "line break"},
		{"header name not a token", Dialer{Header: http.Header{"X A": {"a"}}}, "not an HTTP token"},
		{"protocol with comma", Dialer{Protocols: []string{"a,b"}}, `Protocols entry "a,b"`},
		{"empty protocol", Dialer{Protocols: []string{""}}, "Protocols entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
