package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestDecodeValid(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Frame
	}{
		{"msg", `{"type":"msg","id":"c1-1","room":"r7","body":"hi"}`,
			Frame{Type: TypeMsg, ID: []byte("c1-1"), Room: []byte("r7"), Body: []byte("hi")}},
		{"msg with empty body, fields in any order, whitespace", " {\n\"body\" : \"\" , \"room\":\"r\",\"id\":\"x\",\"type\":\"msg\"}\t",
			Frame{Type: TypeMsg, ID: []byte("x"), Room: []byte("r"), Body: []byte{}}},
		{"ack", `{"type":"ack","id":"c1-1","seq":42}`, Frame{Type: TypeAck, ID: []byte("c1-1"), Seq: 42}},
		{"ack of a duplicate", `{"type":"ack","id":"c1-1","seq":42,"dup":true}`, Frame{Type: TypeAck, ID: []byte("c1-1"), Seq: 42, Dup: true}},
		{"dup false", `{"type":"ack","id":"c1-1","seq":42,"dup":false}`, Frame{Type: TypeAck, ID: []byte("c1-1"), Seq: 42}},
		{"dup on another type is dropped", `{"type":"join","room":"r","dup":true}`, Frame{Type: TypeJoin, Room: []byte("r")}},
		{"deliver", `{"type":"deliver","room":"r","seq":18446744073709551615,"id":"i","body":"b"}`,
			Frame{Type: TypeDeliver, Room: []byte("r"), Seq: 1<<64 - 1, ID: []byte("i"), Body: []byte("b")}},
		{"join", `{"type":"join","room":"lobby"}`, Frame{Type: TypeJoin, Room: []byte("lobby")}},
		{"joined", `{"type":"joined","room":"lobby","through":0}`, Frame{Type: TypeJoined, Room: []byte("lobby")}},
		{"resume", `{"type":"resume","room":"r","last_seq":7}`, Frame{Type: TypeResume, Room: []byte("r"), LastSeq: 7}},
		{"resumed", `{"type":"resumed","room":"r","through":9}`, Frame{Type: TypeResumed, Room: []byte("r"), Through: 9}},
		{"resume_gap", `{"type":"resume_gap","room":"r","from":3,"through":5}`,
			Frame{Type: TypeResumeGap, Room: []byte("r"), From: 3, Through: 5}},
		{"escapes are unescaped", `{"type":"msg","id":"a\"b","room":"\u00e9\/","body":"\\\n\t\ud83d\ude00\ud800x"}`,
			Frame{Type: TypeMsg, ID: []byte(`a"b`), Room: []byte("é/"), Body: []byte("\\\n\t😀\uFFFDx")}},
		{"unknown fields and fields of other types are skipped", `{"x":[1,{"y":null},-2.5e3,true,false,"s"],"seq":3,"type":"join","room":"r","t":{}}`,
			Frame{Type: TypeJoin, Room: []byte("r")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			if err := Decode([]byte(tc.in), &f); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !sameFrame(&f, &tc.want) {
				t.Fatalf("got %+v\nwant %+v", f, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		cause error
		field string
	}{
		{"empty input", ``, ErrSyntax, ""},
		{"not an object", `["msg"]`, ErrSyntax, ""},
		{"truncated", `{"type":"msg","id":"x"`, ErrSyntax, ""},
		{"trailing data", `{"type":"join","room":"r"} {}`, ErrSyntax, ""},
		{"trailing comma", `{"type":"join","room":"r",}`, ErrSyntax, ""},
		{"single quotes", `{'type':'join'}`, ErrSyntax, ""},
		{"raw control character in string", "{\"type\":\"join\",\"room\":\"a\nb\"}", ErrSyntax, ""},
		{"bad escape", `{"type":"join","room":"\q"}`, ErrSyntax, ""},
		{"bad unicode escape", `{"type":"join","room":"\u12G4"}`, ErrSyntax, ""},
		{"invalid UTF-8", "{\"type\":\"join\",\"room\":\"\xff\"}", ErrSyntax, ""},
		{"deep nesting in skipped field", `{"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `,"type":"join","room":"r"}`, ErrSyntax, ""},
		{"bad literal", `{"x":nul,"type":"join","room":"r"}`, ErrSyntax, ""},
		{"bad number in skipped field", `{"x":01.,"type":"join","room":"r"}`, ErrSyntax, ""},
		{"no type", `{"room":"r"}`, ErrMissingField, "type"},
		{"empty object", `{}`, ErrMissingField, "type"},
		{"unknown type", `{"type":"hello","room":"r"}`, ErrUnknownType, "type"},
		{"type is not a string", `{"type":1}`, ErrBadField, "type"},
		{"msg without body", `{"type":"msg","id":"x","room":"r"}`, ErrMissingField, "body"},
		{"msg without id", `{"type":"msg","room":"r","body":""}`, ErrMissingField, "id"},
		{"resume without last_seq", `{"type":"resume","room":"r"}`, ErrMissingField, "last_seq"},
		{"empty id", `{"type":"msg","id":"","room":"r","body":""}`, ErrBadField, "id"},
		{"id too long", `{"type":"msg","id":"` + strings.Repeat("i", MaxIDLen+1) + `","room":"r","body":""}`, ErrBadField, "id"},
		{"room too long", `{"type":"join","room":"` + strings.Repeat("r", MaxRoomLen+1) + `"}`, ErrBadField, "room"},
		{"escaped control character in room", `{"type":"join","room":"a\u0000"}`, ErrBadField, "room"},
		{"field given twice", `{"type":"join","room":"a","room":"b"}`, ErrBadField, "room"},
		{"negative seq", `{"type":"resume","room":"r","last_seq":-1}`, ErrBadField, "last_seq"},
		{"fractional seq", `{"type":"resume","room":"r","last_seq":1.5}`, ErrBadField, "last_seq"},
		{"exponent seq", `{"type":"resume","room":"r","last_seq":1e3}`, ErrBadField, "last_seq"},
		{"leading zero", `{"type":"resume","room":"r","last_seq":007}`, ErrBadField, "last_seq"},
		{"seq overflows", `{"type":"ack","id":"x","seq":18446744073709551616}`, ErrBadField, "seq"},
		{"seq as string", `{"type":"ack","id":"x","seq":"1"}`, ErrBadField, "seq"},
		{"dup as string", `{"type":"ack","id":"x","seq":1,"dup":"yes"}`, ErrBadField, "dup"},
		{"body as number", `{"type":"msg","id":"x","room":"r","body":1}`, ErrBadField, "body"},
		{"too large", `{"type":"msg","id":"x","room":"r","body":"` + strings.Repeat("b", MaxFrameSize) + `"}`, ErrTooLarge, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			err := Decode([]byte(tc.in), &f)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Decode = %v, want a *Error", err)
			}
			if !errors.Is(err, tc.cause) || pe.Field != tc.field {
				t.Fatalf("Decode = %v (field %q), want cause %v field %q", err, pe.Field, tc.cause, tc.field)
			}
			wantCode := uint16(ClosePolicy)
			if tc.cause == ErrTooLarge {
				wantCode = CloseTooLarge
			}
			if pe.CloseCode() != wantCode {
				t.Fatalf("CloseCode = %d, want %d", pe.CloseCode(), wantCode)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	frames := []Frame{
		{Type: TypeMsg, ID: []byte("c1-1"), Room: []byte("r"), Body: []byte("quote \" backslash \\ nl \n ctl \x01 é")},
		{Type: TypeAck, ID: []byte("c1-1"), Seq: 1},
		{Type: TypeAck, ID: []byte("c1-1"), Seq: 1, Dup: true},
		{Type: TypeDeliver, Room: []byte("r"), Seq: 99, ID: []byte("z"), Body: []byte{}},
		{Type: TypeJoin, Room: []byte("r")},
		{Type: TypeJoined, Room: []byte("r"), Through: 12},
		{Type: TypeResume, Room: []byte("r"), LastSeq: 12},
		{Type: TypeResumed, Room: []byte("r"), Through: 30},
		{Type: TypeResumeGap, Room: []byte("r"), From: 13, Through: 20},
	}
	for _, in := range frames {
		t.Run(in.Type.String(), func(t *testing.T) {
			b := Append(nil, &in)
			var out Frame
			if err := Decode(b, &out); err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if !sameFrame(&in, &out) {
				t.Fatalf("round trip of %s: got %+v", b, out)
			}
		})
	}
}

func TestTypedAppendersMatchAppend(t *testing.T) {
	body := []byte("b\"ody")
	cases := []struct {
		got  []byte
		want Frame
	}{
		{AppendMsg(nil, "i", "r", body), Frame{Type: TypeMsg, ID: []byte("i"), Room: []byte("r"), Body: body}},
		{AppendAck(nil, "i", 5), Frame{Type: TypeAck, ID: []byte("i"), Seq: 5}},
		{AppendAckDup(nil, "i", 5), Frame{Type: TypeAck, ID: []byte("i"), Seq: 5, Dup: true}},
		{AppendDeliver(nil, "r", 5, "i", body), Frame{Type: TypeDeliver, Room: []byte("r"), Seq: 5, ID: []byte("i"), Body: body}},
		{AppendJoin(nil, "r"), Frame{Type: TypeJoin, Room: []byte("r")}},
		{AppendJoined(nil, "r", 3), Frame{Type: TypeJoined, Room: []byte("r"), Through: 3}},
		{AppendResume(nil, "r", 3), Frame{Type: TypeResume, Room: []byte("r"), LastSeq: 3}},
		{AppendResumed(nil, "r", 4), Frame{Type: TypeResumed, Room: []byte("r"), Through: 4}},
		{AppendResumeGap(nil, "r", 1, 2), Frame{Type: TypeResumeGap, Room: []byte("r"), From: 1, Through: 2}},
	}
	for _, tc := range cases {
		var f Frame
		if err := Decode(tc.got, &f); err != nil {
			t.Fatalf("Decode(%s): %v", tc.got, err)
		}
		if !sameFrame(&f, &tc.want) {
			t.Errorf("%s decodes to %+v, want %+v", tc.got, f, tc.want)
		}
	}
	if got, want := string(AppendDeliver(nil, "r", 5, "i", []byte("x"))), `{"type":"deliver","room":"r","seq":5,"id":"i","body":"x"}`; got != want {
		t.Errorf("AppendDeliver = %s, want %s", got, want)
	}
}

func TestAppendStringInvalidUTF8(t *testing.T) {
	if got, want := string(AppendString(nil, "a\xffb\xe2\x82")), `"a\ufffdb\ufffd\ufffd"`; got != want {
		t.Fatalf("AppendString = %s, want %s", got, want)
	}
}

func TestDecodeAllocs(t *testing.T) {
	msg := []byte(`{"type":"deliver","room":"room-17","seq":123456,"id":"c42-77","body":"hello \"world\""}`)
	var f Frame
	Decode(msg, &f) // grow scratch
	if n := testing.AllocsPerRun(100, func() {
		if err := Decode(msg, &f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Decode allocates %v times per frame, want 0", n)
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], &f) }); n != 0 {
		t.Fatalf("Append allocates %v times per frame, want 0", n)
	}
}

func BenchmarkDecodeDeliver(b *testing.B) {
	msg := []byte(`{"type":"deliver","room":"room-17","seq":123456,"id":"c42-77","body":"0123456789abcdef0123456789abcdef"}`)
	var f Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := Decode(msg, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendDeliver(b *testing.B) {
	body := []byte("0123456789abcdef0123456789abcdef")
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendDeliver(buf[:0], "room-17", 123456, "c42-77", body)
	}
}

func sameFrame(a, b *Frame) bool {
	return a.Type == b.Type && bytes.Equal(a.ID, b.ID) && bytes.Equal(a.Room, b.Room) &&
		bytes.Equal(a.Body, b.Body) && (a.Body == nil) == (b.Body == nil) &&
		a.Seq == b.Seq && a.LastSeq == b.LastSeq && a.Through == b.Through && a.From == b.From && a.Dup == b.Dup
}
