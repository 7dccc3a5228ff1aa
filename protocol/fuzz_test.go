package protocol

import "testing"

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, and a
// frame it accepts must survive Append and Decode unchanged. The corpus in
// testdata/fuzz/FuzzDecode holds every frame type and known bad inputs.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"msg","id":"c1-1","room":"r","body":"hi"}`,
		`{"type":"ack","id":"c1-1","seq":1}`,
		`{"type":"ack","id":"c1-1","seq":1,"dup":true}`,
		`{"type":"join","room":"r","dup":fals}`,
		`{"type":"deliver","room":"r","seq":2,"id":"c1-1","body":"\u00e9\ud83d\ude00"}`,
		`{"type":"join","room":"r"}`,
		`{"type":"joined","room":"r","through":0}`,
		`{"type":"resume","room":"r","last_seq":9}`,
		`{"type":"resumed","room":"r","through":10}`,
		`{"type":"resume_gap","room":"r","from":1,"through":5}`,
		`{"x":[{"a":[1,-2.5e+3,true,null]}],"type":"join","room":"r"}`,
		`{"type":"msg","id":"\ud800","room":"r","body":"\\"}`,
		`{"type":"ack","id":"x","seq":18446744073709551616}`,
		`{"type":"join","room":"a","room":"b"}`,
		`{"type":"nope"}`,
		`{"type":"msg"`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var a Frame
		if err := Decode(in, &a); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Decode error %T %v is not a *Error", err, err)
			}
			return
		}
		enc := Append(nil, &a)
		var b Frame
		if err := Decode(enc, &b); err != nil {
			t.Fatalf("re-decode of %q (from %q): %v", enc, in, err)
		}
		if !sameFrame(&a, &b) {
			t.Fatalf("round trip changed the frame: %q -> %q", in, enc)
		}
	})
}
