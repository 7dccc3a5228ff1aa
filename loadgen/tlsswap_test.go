package loadgen

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/tlsconf"
)

// TestTLSSeqsFound: this Go's tls.Conn has the fields a take-over needs;
// without them every wss:// connection stays on crypto/tls.
func TestTLSSeqsFound(t *testing.T) {
	if !tlsSeqs.ok {
		t.Fatal("tls.Conn has no in/out halfConn with seq and trafficSecret on this Go: no connection leaves crypto/tls")
	}
}

// rawTLS is the server end of a TLS 1.3 connection taken over from
// crypto/tls with the record layer, for tests: it writes and reads
// records itself.
type rawTLS struct {
	c  net.Conn
	k  recordKeys
	in []byte
}

// takeOverServer takes the server side of tc, whose handshake is over
// and whose config logged its secrets into log, from crypto/tls.
func takeOverServer(c net.Conn, tc *tls.Conn, log *secretLog) (*rawTLS, error) {
	k := log.keys(tc.ConnectionState())
	if k.suite == 0 {
		return nil, fmt.Errorf("no record keys for %+v", tc.ConnectionState())
	}
	k.rd, k.wr = k.wr, k.rd // the server reads what the client writes
	k.rd.seq, k.wr.seq = connSeqs(tc)
	return &rawTLS{c: c, k: k, in: append([]byte(nil), readAhead(tc)...)}, nil
}

func (s *rawTLS) write(typ byte, p []byte) error {
	_, err := s.c.Write(s.k.seal(nil, typ, p))
	return err
}

// read returns the next record's content type and plaintext.
func (s *rawTLS) read() (byte, []byte, error) {
	for {
		n, err := recordLen(s.in)
		if err != nil {
			return 0, nil, err
		}
		if n > 0 && len(s.in) >= n {
			rec := s.in[:n]
			s.in = s.in[n:]
			o := opener{k: &s.k}
			return o.open(rec)
		}
		b := make([]byte, 4096)
		m, err := s.c.Read(b)
		if err != nil {
			return 0, nil, err
		}
		s.in = append(s.in, b[:m]...)
	}
}

// serverConfig returns a TLS 1.3 server config logging its secrets.
func serverConfig(t *testing.T, log *secretLog) *tls.Config {
	srv, err := tlsconf.NewServer(tlsconf.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := srv.Config().Clone()
	if log != nil {
		cfg.KeyLogWriter = log
	}
	return cfg
}

// TestRecordLayerAgainstCryptoTLS: a server taken over from crypto/tls
// after its handshake (its session ticket sent, so its write sequence
// number is not 0) talks to a crypto/tls client both ways, through a
// KeyUpdate each way: crypto/tls checks the record layer's records, its
// sequence numbers taken over and its next traffic secrets. (The suite is
// the one crypto/tls picks: TLS 1.3's are not configurable.)
func TestRecordLayerAgainstCryptoTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	log := new(secretLog)
	cfg := serverConfig(t, log)
	accepted := make(chan *rawTLS, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(c, cfg)
		if tc.Handshake() != nil {
			c.Close()
			return
		}
		srv, err := takeOverServer(c, tc, log)
		if err != nil {
			t.Error(err)
			c.Close()
			srv = nil
		}
		accepted <- srv
	}()
	cl, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, ClientSessionCache: new(tlsconf.Session)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.SetDeadline(time.Now().Add(10 * time.Second))
	srv := <-accepted
	if srv == nil {
		t.FailNow()
	}
	defer srv.c.Close()
	srv.c.SetDeadline(time.Now().Add(10 * time.Second))
	talkAcrossKeyUpdates(t, cl, srv)
}

func talkAcrossKeyUpdates(t *testing.T, cl *tls.Conn, srv *rawTLS) {
	expectRead(t, cl, srv, "one", recordApplication)
	expectWrite(t, cl, srv, "two")
	must(t, srv.write(recordHandshake, []byte{hsKeyUpdate, 0, 0, 1, 1})) // update_requested
	srv.k.wr.update(srv.k.suite)
	expectRead(t, cl, srv, "three, after the server's KeyUpdate", recordApplication)
	if _, err := cl.Write([]byte("four")); err != nil {
		t.Fatal(err)
	}
	if typ, msg, err := srv.read(); err != nil || typ != recordHandshake || !bytes.Equal(msg, []byte{hsKeyUpdate, 0, 0, 1, 0}) {
		t.Fatalf("after the server's KeyUpdate: type %d %x, %v; want the client's KeyUpdate", typ, msg, err)
	}
	srv.k.rd.update(srv.k.suite)
	if typ, msg, err := srv.read(); err != nil || typ != recordApplication || string(msg) != "four" {
		t.Fatalf("type %d %q, %v; want \"four\" under the client's next secret", typ, msg, err)
	}
}

// expectRead sends msg from the raw server; the crypto/tls client must
// read it.
func expectRead(t *testing.T, cl *tls.Conn, srv *rawTLS, msg string, typ byte) {
	t.Helper()
	must(t, srv.write(typ, []byte(msg)))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(cl, got); err != nil || string(got) != msg {
		t.Fatalf("client read %q, %v; want %q", got, err, msg)
	}
}

// expectWrite sends msg from the crypto/tls client; the raw server must
// read it.
func expectWrite(t *testing.T, cl *tls.Conn, srv *rawTLS, msg string) {
	t.Helper()
	if _, err := cl.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	for {
		typ, got, err := srv.read()
		must(t, err)
		if typ == recordHandshake && len(got) > 0 && got[0] == hsNewSessionTicket {
			continue
		}
		if typ != recordApplication || string(got) != msg {
			t.Fatalf("server read type %d %q, want %q", typ, got, msg)
		}
		return
	}
}
