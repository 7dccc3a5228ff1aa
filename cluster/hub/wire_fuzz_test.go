package hub

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/stampede-dev/stampede/agent"
)

// fuzzKey is the session key of the fuzz targets.
var fuzzKey = []byte("0123456789abcdef0123456789abcdef")

// encodeHeaders is a NATS header block as it travels ("NATS/1.0" line,
// "Name: value" lines, a blank line).
func encodeHeaders(h nats.Header) []byte {
	b := []byte("NATS/1.0\r\n")
	for k, vs := range h {
		for _, v := range vs {
			b = append(b, k+": "+v+"\r\n"...)
		}
	}
	return append(b, "\r\n"...)
}

// FuzzVerify feeds the hub's decoder what a peer on the NATS server can
// send: a subject, a raw header block (decoded as nats.go decodes one
// off the wire) and a body. verify must not panic; what it accepts must
// carry the MAC of the fields it returns; and the body of an accepted
// message goes through the decode of the channel's reader (agent.Message,
// then the clock shift, as agent.OverLink does) without a panic. A
// message newMsg signs verifies with its own fields, and fails under
// another key.
func FuzzVerify(f *testing.F) {
	signed := newMsg(fuzzKey, "stampede.s.0123456789abcdef.up", 7, kMsg, 2, []byte(`{"v":1,"kind":"progress","progress":{"at":"2026-12-02T03:00:00Z"}}`))
	f.Add(signed.Subject, encodeHeaders(signed.Header), signed.Data, uint64(7), 2, int64(time.Second))
	beat := newMsg(fuzzKey, "stampede.s.0123456789abcdef.down", 1, kBeat, 0, nil)
	f.Add(beat.Subject, encodeHeaders(beat.Header), beat.Data, uint64(1), 0, int64(0))
	f.Add("x", []byte("NATS/1.0\r\nStampede-Seq: 18446744073709551616\r\n\r\n"), []byte("{}"), uint64(0), -1, int64(-1))
	f.Add("x", []byte("NATS/1.0\r\nStampede-Ch: -9223372036854775808\r\nStampede-Seq: 1\r\n\r\n"), []byte(`{"reply":{"restarted":{"steps":[{}]}}}`), uint64(1<<63), 1<<30, int64(1<<62))
	f.Add("", []byte("NATS/1.0 503\r\n\r\n"), []byte(nil), uint64(0), 0, int64(0))
	f.Fuzz(func(t *testing.T, subject string, hdr, body []byte, seq uint64, ch int, shift int64) {
		if h, err := nats.DecodeHeadersMsg(hdr); err == nil {
			m := &nats.Msg{Subject: subject, Header: h, Data: body}
			if p, err := verify(fuzzKey, m); err == nil {
				if want := sign(fuzzKey, subject, p.seq, p.kind, p.ch, p.body); m.Header.Get(hMAC) != want {
					t.Fatalf("verify accepted MAC %q, the fields sign to %q", m.Header.Get(hMAC), want)
				}
				var cm agent.Message
				if json.Unmarshal(p.body, &cm) == nil {
					agent.ShiftTimes(&cm, time.Duration(shift))
				}
			}
		}
		m := newMsg(fuzzKey, subject, seq, kMsg, ch, body)
		p, err := verify(fuzzKey, m)
		if err != nil || p.seq != seq || p.ch != ch || p.kind != kMsg || string(p.body) != string(body) {
			t.Fatalf("newMsg(seq %d, ch %d) verified as %+v, %v", seq, ch, p, err)
		}
		if _, err := verify([]byte("another key, same length, 32 b!!"), m); err != errBadMAC {
			t.Fatalf("a message signed with the run's key verified under another: %v", err)
		}
		if m.Header.Get(hSeq) != strconv.FormatUint(seq, 10) {
			t.Fatalf("sequence header %q for %d", m.Header.Get(hSeq), seq)
		}
	})
}
