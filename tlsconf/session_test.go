package tlsconf

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// failing runs a listener that fails every handshake with how: "close"
// (the server closes before answering), "reset" (it resets the
// connection), "silent" (it never answers: the client's deadline ends it)
// or "plaintext" (it answers in HTTP, not TLS). It returns the address.
func failing(t *testing.T, how string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			switch how {
			case "reset":
				c.Read(make([]byte, 1))
				c.(*net.TCPConn).SetLinger(0)
			case "silent":
				time.Sleep(500 * time.Millisecond)
			case "plaintext":
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// A session survives a handshake that failed on the transport (closed,
// reset, timed out before the server answered) and resumes at the next
// one; a peer that does not speak TLS makes the client forget it.
func TestSessionSurvivesTransportFailure(t *testing.T) {
	addr := serve(t, newServer(t, ServerOptions{}))
	for _, tc := range []struct {
		how  string
		keep bool
	}{{"close", true}, {"reset", true}, {"silent", true}, {"plaintext", false}} {
		t.Run(tc.how, func(t *testing.T) {
			var s Session
			if dial(t, addr, &s) || !s.Held() {
				t.Fatalf("first handshake: resumed or no session (held %v)", s.Held())
			}
			bad := failing(t, tc.how)
			d := &net.Dialer{Timeout: 5 * time.Second}
			conn, err := d.Dial("tcp", bad)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
			tc2 := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: "127.0.0.1", ClientSessionCache: &s})
			herr := tc2.Handshake()
			conn.Close()
			if herr == nil {
				t.Fatal("handshake with the failing peer succeeded")
			}
			if s.Held() {
				t.Fatal("crypto/tls kept the session: the case tests nothing")
			}
			if TransportError(herr) != tc.keep {
				t.Errorf("TransportError(%v) = %v, want %v", herr, !tc.keep, tc.keep)
			}
			s.Failed(herr)
			if s.Held() != tc.keep {
				t.Fatalf("after %v: held %v, want %v", herr, s.Held(), tc.keep)
			}
			if got := dial(t, addr, &s); got != tc.keep {
				t.Errorf("next handshake resumed %v, want %v", got, tc.keep)
			}
		})
	}
}

// MeasureCost makes its handshakes and counts them, full and resumed,
// each with some CPU.
func TestMeasureCost(t *testing.T) {
	st, cl, err := MeasureCost(ECDSAP256, 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Full != 3 || st.Resumed != 3 || st.FullCPUNS == 0 || st.ResumedCPUNS == 0 {
		t.Errorf("stats %+v", st)
	}
	if cl.Full != 3 || cl.Resumed != 3 || cl.FullCPUNS == 0 || cl.ResumedCPUNS == 0 {
		t.Errorf("client stats %+v", cl)
	}
}
