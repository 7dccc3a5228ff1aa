package loadgen

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"reflect"
	"unsafe"
)

// Taking a TLS 1.3 connection over from crypto/tls. The handshake runs on
// crypto/tls, which gives its traffic secrets to the handshake's
// KeyLogWriter (secretLog). The reactor keeps reading through the
// tls.Conn until the server's session ticket came (crypto/tls must take
// it: it needs the resumption secret, which no key log gives), or the
// upgrade answer came without one, or at once without a session cache;
// then, between two records, it takes the sequence numbers from the
// tls.Conn (found by reflection, tlsSeqs) and the bytes it read ahead,
// and drops the tls.Conn: the reactor's record layer (tlsrecord.go,
// tlsdrive.go) runs the connection from there. TLS 1.2 connections, and
// every connection on a Go whose tls.Conn has no such fields, stay on
// crypto/tls.

// secretLog is one handshake's KeyLogWriter: it keeps the application
// traffic secrets (NSS key log lines CLIENT_TRAFFIC_SECRET_0 and
// SERVER_TRAFFIC_SECRET_0) and drops the rest.
type secretLog struct {
	client, server       [48]byte
	clientLen, serverLen int
}

func (l *secretLog) Write(p []byte) (int, error) {
	f := bytes.Fields(p)
	if len(f) != 3 || hex.DecodedLen(len(f[2])) > len(l.client) {
		return len(p), nil
	}
	switch string(f[0]) {
	case "CLIENT_TRAFFIC_SECRET_0":
		l.clientLen, _ = hex.Decode(l.client[:], f[2])
	case "SERVER_TRAFFIC_SECRET_0":
		l.serverLen, _ = hex.Decode(l.server[:], f[2])
	}
	return len(p), nil
}

// keys returns the record keys of a finished handshake, suite 0 when the
// record layer cannot take it over: not TLS 1.3, another suite, or
// secrets missing or of the wrong length.
func (l *secretLog) keys(st tls.ConnectionState) recordKeys {
	h, _, ok := suiteParams(st.CipherSuite)
	if l == nil || st.Version != tls.VersionTLS13 || !ok || !tlsSeqs.ok {
		return recordKeys{}
	}
	if n := h().Size(); l.clientLen != n || l.serverLen != n {
		return recordKeys{}
	}
	return recordKeys{suite: st.CipherSuite, rd: trafficKeys{secret: l.server}, wr: trafficKeys{secret: l.client}}
}

// tlsSeqs locates the sequence numbers and traffic secrets of a
// tls.Conn's two directions: its in and out halfConns' seq and
// trafficSecret, found by reflection, by name and type, once
// (TestTLSSeqsFound says whether this Go has them).
var tlsSeqs = findTLSSeqs()

type tlsSeqOffsets struct {
	in, out             uintptr // seq
	inSecret, outSecret uintptr // trafficSecret
	ok                  bool
}

func findTLSSeqs() tlsSeqOffsets {
	t := reflect.TypeFor[tls.Conn]()
	in, ok1 := t.FieldByName("in")
	out, ok2 := t.FieldByName("out")
	if !ok1 || !ok2 || in.Type != out.Type || in.Type.Kind() != reflect.Struct || !tlsBufs.ok {
		return tlsSeqOffsets{}
	}
	seq, ok3 := in.Type.FieldByName("seq")
	secret, ok4 := in.Type.FieldByName("trafficSecret")
	if !ok3 || !ok4 || seq.Type != reflect.TypeFor[[8]byte]() || secret.Type != reflect.TypeFor[[]byte]() {
		return tlsSeqOffsets{}
	}
	return tlsSeqOffsets{in: in.Offset + seq.Offset, out: out.Offset + seq.Offset,
		inSecret: in.Offset + secret.Offset, outSecret: out.Offset + secret.Offset, ok: true}
}

// connSeqs returns tc's next read and write sequence numbers.
func connSeqs(tc *tls.Conn) (in, out uint64) {
	p := unsafe.Pointer(tc)
	return beUint64((*[8]byte)(unsafe.Add(p, tlsSeqs.in))), beUint64((*[8]byte)(unsafe.Add(p, tlsSeqs.out)))
}

// sameSecrets reports whether tc's current traffic secrets are k's: not
// when crypto/tls handled a KeyUpdate before the take-over.
func sameSecrets(tc *tls.Conn, k *recordKeys) bool {
	h, _, _ := suiteParams(k.suite)
	n := h().Size()
	p := unsafe.Pointer(tc)
	in := *(*[]byte)(unsafe.Add(p, tlsSeqs.inSecret))
	out := *(*[]byte)(unsafe.Add(p, tlsSeqs.outSecret))
	return bytes.Equal(in, k.rd.secret[:n]) && bytes.Equal(out, k.wr.secret[:n])
}

func beUint64(b *[8]byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// betweenRecords reports whether tc holds no decrypted data and no part
// of a handshake message: what it read ahead is whole or partial records.
func betweenRecords(tc *tls.Conn) bool {
	p := unsafe.Pointer(tc)
	return (*bytes.Reader)(unsafe.Add(p, tlsBufs.input)).Len() == 0 && (*bytes.Buffer)(unsafe.Add(p, tlsBufs.hand)).Len() == 0
}

// readAhead returns the bytes tc read from the socket and did not decrypt.
func readAhead(tc *tls.Conn) []byte {
	return (*bytes.Buffer)(unsafe.Add(unsafe.Pointer(tc), tlsBufs.rawInput)).Bytes()
}

// takeOverDue reports whether the shard's j-th client's connection can
// leave crypto/tls now: TLS 1.3 with its secrets, between records, and
// its session ticket came (or will not: no session cache, or the upgrade
// answer came first).
func (r *reactor) takeOverDue(j int32) bool {
	t := &r.tls[j]
	if t.conn == nil || t.keys.suite == 0 {
		return false
	}
	if !r.f.cfg.TLSNoResume && r.clients[j].state != stConnected {
		if st, _ := t.sess.Get(""); st == nil || st == t.before {
			return false
		}
	}
	return betweenRecords(t.conn)
}

// takeOver moves the shard's j-th client's connection from its tls.Conn
// to the reactor's record layer, and handles the records the tls.Conn had
// read ahead; one whose secrets crypto/tls changed stays on it. It
// reports false when the connection ended meanwhile.
func (r *reactor) takeOver(j int32, now int64) bool {
	t := &r.tls[j]
	if !sameSecrets(t.conn, &t.keys) {
		t.keys = recordKeys{} // crypto/tls keeps the connection
		return true
	}
	t.keys.rd.seq, t.keys.wr.seq = connSeqs(t.conn)
	if ahead := readAhead(t.conn); len(ahead) > 0 {
		t.raw = append([]byte(nil), ahead...)
	}
	t.conn, t.fc, t.before = nil, nil, nil
	r.takenOver.Add(1)
	return t.raw == nil || r.records(j, nil, now)
}
