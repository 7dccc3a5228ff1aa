package protocol

import (
	"strconv"
	"unicode/utf8"
)

// Append encodes f as its type's JSON frame and appends it to dst. Only
// the fields of f's type are written, in a fixed order ("type" first).
// Strings are escaped; bytes that are not UTF-8 become U+FFFD so the frame
// is always valid text. Append does not validate lengths: Decode does, at
// the receiver.
func Append(dst []byte, f *Frame) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, f.Type.String()...)
	dst = append(dst, '"')
	need := required[f.Type]
	if need&fRoom != 0 {
		dst = appendStrField(dst, "room", f.Room)
	}
	if need&fSeq != 0 {
		dst = appendUintField(dst, "seq", f.Seq)
	}
	if need&fID != 0 {
		dst = appendStrField(dst, "id", f.ID)
	}
	if need&fLastSeq != 0 {
		dst = appendUintField(dst, "last_seq", f.LastSeq)
	}
	if need&fFrom != 0 {
		dst = appendUintField(dst, "from", f.From)
	}
	if need&fThrough != 0 {
		dst = appendUintField(dst, "through", f.Through)
	}
	if need&fBody != 0 {
		dst = appendStrField(dst, "body", f.Body)
	}
	if f.Dup && f.Type == TypeAck {
		dst = append(dst, `,"dup":true`...)
	}
	return append(dst, '}')
}

// AppendMsg appends a client msg frame.
func AppendMsg(dst []byte, id, room string, body []byte) []byte {
	dst = append(dst, `{"type":"msg"`...)
	dst = appendStrField(dst, "id", id)
	dst = appendStrField(dst, "room", room)
	dst = appendStrField(dst, "body", body)
	return append(dst, '}')
}

// AppendAck appends a server ack frame.
func AppendAck(dst []byte, id string, seq uint64) []byte {
	dst = append(dst, `{"type":"ack"`...)
	dst = appendStrField(dst, "id", id)
	dst = appendUintField(dst, "seq", seq)
	return append(dst, '}')
}

// AppendAckDup appends the ack of a duplicate: seq is the message's
// original seq, and "dup":true says nothing was stored or delivered.
func AppendAckDup(dst []byte, id string, seq uint64) []byte {
	dst = append(dst, `{"type":"ack"`...)
	dst = appendStrField(dst, "id", id)
	dst = appendUintField(dst, "seq", seq)
	return append(dst, `,"dup":true}`...)
}

// AppendDeliver appends a server deliver frame.
func AppendDeliver(dst []byte, room string, seq uint64, id string, body []byte) []byte {
	dst = append(dst, `{"type":"deliver"`...)
	dst = appendStrField(dst, "room", room)
	dst = appendUintField(dst, "seq", seq)
	dst = appendStrField(dst, "id", id)
	dst = appendStrField(dst, "body", body)
	return append(dst, '}')
}

// AppendJoin appends a client join frame.
func AppendJoin(dst []byte, room string) []byte {
	dst = append(dst, `{"type":"join"`...)
	dst = appendStrField(dst, "room", room)
	return append(dst, '}')
}

// AppendJoined appends a server joined frame.
func AppendJoined(dst []byte, room string, through uint64) []byte {
	dst = append(dst, `{"type":"joined"`...)
	dst = appendStrField(dst, "room", room)
	dst = appendUintField(dst, "through", through)
	return append(dst, '}')
}

// AppendResume appends a client resume frame.
func AppendResume(dst []byte, room string, lastSeq uint64) []byte {
	dst = append(dst, `{"type":"resume"`...)
	dst = appendStrField(dst, "room", room)
	dst = appendUintField(dst, "last_seq", lastSeq)
	return append(dst, '}')
}

// AppendResumed appends a server resumed frame.
func AppendResumed(dst []byte, room string, through uint64) []byte {
	dst = append(dst, `{"type":"resumed"`...)
	dst = appendStrField(dst, "room", room)
	dst = appendUintField(dst, "through", through)
	return append(dst, '}')
}

// AppendResumeGap appends a server resume_gap frame: seqs from..through of
// room are no longer kept.
func AppendResumeGap(dst []byte, room string, from, through uint64) []byte {
	dst = append(dst, `{"type":"resume_gap"`...)
	dst = appendStrField(dst, "room", room)
	dst = appendUintField(dst, "from", from)
	dst = appendUintField(dst, "through", through)
	return append(dst, '}')
}

func appendUintField(dst []byte, name string, v uint64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendUint(dst, v, 10)
}

func appendStrField[S string | []byte](dst []byte, name string, v S) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return AppendString(dst, v)
}

const hex = "0123456789abcdef"

// AppendString appends v as a JSON string literal. Bytes that are not
// valid UTF-8 are written as U+FFFD.
func AppendString[S string | []byte](dst []byte, v S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, v[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		var rb [utf8.UTFMax]byte
		n := copy(rb[:], v[i:min(i+utf8.UTFMax, len(v))])
		r, size := utf8.DecodeRune(rb[:n])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, v[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, v[start:]...)
	return append(dst, '"')
}
