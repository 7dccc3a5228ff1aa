package httpretry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/stampede-dev/stampede/connerr"
)

// stubTransport fails every round trip with err, counting them.
type stubTransport struct {
	err error
	n   int
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n++
	if r.Body != nil {
		r.Body.Close()
	}
	return nil, s.err
}

// TestConnectionFailureClasses: which connection-level failures are
// retried, by their connerr class. The errors are the ones net/http
// returns, injected through Config.Base.
func TestConnectionFailureClasses(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		class   connerr.Class
		retried bool
	}{
		{name: "dns", err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}, class: connerr.DNS, retried: true},
		{name: "refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, class: connerr.Refused, retried: true},
		{name: "reset", err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, class: connerr.Reset, retried: true},
		{name: "eof before the answer", err: fmt.Errorf("net/http: transport closed: %w", io.EOF), class: connerr.Reset, retried: true},
		{name: "timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, class: connerr.Timeout, retried: true},
		// A rejected certificate will be rejected again.
		{name: "tls", err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, class: connerr.TLS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stub := &stubTransport{err: tc.err}
			clock := newFakeClock()
			_, attempts, err := send(t, clock.config(Config{Base: stub, MaxRetries: 2}), newRequest(t, "GET", "http://127.0.0.1:9/", ""))
			want, cause := 1, ErrNotRetryable
			if tc.retried {
				want, cause = 3, ErrRetriesExhausted
			}
			if stub.n != want || len(attempts) != want || !errors.Is(err, cause) || !errors.Is(err, tc.err) {
				t.Fatalf("round trips %d, err %v; want %d, %v", stub.n, err, want, cause)
			}
			for _, a := range attempts {
				if a.Class != tc.class {
					t.Fatalf("attempt %d class %v; want %v", a.N, a.Class, tc.class)
				}
			}
		})
	}
}

// TestServerClosesConnection: a real server that accepts and closes without
// answering is classed reset and retried; the next attempt succeeds.
func TestServerClosesConnection(t *testing.T) {
	_, ts := newScript(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	st, attempts, err := send(t, newFakeClock().config(Config{}), newRequest(t, "GET", ts.URL, ""))
	if err != nil || st != 200 || len(attempts) != 2 || attempts[0].Class != connerr.Reset {
		t.Fatalf("status %d err %v attempts %+v; want reset then 200", st, err, attempts)
	}
}
