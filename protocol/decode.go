package protocol

import (
	"strconv"
	"unicode/utf8"
)

// Decode parses one frame from p into f, replacing f's previous contents.
// It accepts exactly one JSON object with a known "type" and every field
// that type requires; strings must be JSON strings and sequence numbers
// non-negative JSON integers. Fields the type does not use, and unknown
// fields, are skipped (their values must still be valid JSON); a field
// given twice is an error. Any failure is an *Error.
//
// Decode does not allocate once f's scratch buffer has grown to the size
// of the largest frame with escaped strings.
func Decode(p []byte, f *Frame) error {
	scratch := f.scratch[:0]
	*f = Frame{scratch: scratch}
	if len(p) > MaxFrameSize {
		return &Error{Cause: ErrTooLarge, Detail: strconv.Itoa(len(p)) + " bytes, limit " + strconv.Itoa(MaxFrameSize)}
	}
	if cap(f.scratch) < len(p) {
		// Unescaping never lengthens a string, so a scratch buffer as long
		// as the frame never reallocates and earlier slices stay valid.
		f.scratch = make([]byte, 0, len(p))
	}
	d := decoder{p: p, f: f}
	if err := d.object(); err != nil {
		return err
	}
	return f.check(len(p))
}

// check validates the decoded fields against the type.
func (f *Frame) check(end int) error {
	if f.has&fType == 0 {
		return &Error{Cause: ErrMissingField, Field: "type", Offset: end}
	}
	if miss := required[f.Type] &^ f.has; miss != 0 {
		return &Error{Cause: ErrMissingField, Field: (miss & -miss).name(), Offset: end, Detail: "required in " + f.Type.String()}
	}
	need := required[f.Type]
	if need&fID != 0 {
		if err := checkName("id", f.ID, MaxIDLen, end); err != nil {
			return err
		}
	}
	if need&fRoom != 0 {
		if err := checkName("room", f.Room, MaxRoomLen, end); err != nil {
			return err
		}
	}
	// Zero the fields the type does not carry, so a Frame holds only what
	// its type means.
	if need&fID == 0 {
		f.ID = nil
	}
	if need&fRoom == 0 {
		f.Room = nil
	}
	if need&fBody == 0 {
		f.Body = nil
	}
	if need&fSeq == 0 {
		f.Seq = 0
	}
	if need&fLastSeq == 0 {
		f.LastSeq = 0
	}
	if need&fThrough == 0 {
		f.Through = 0
	}
	if need&fFrom == 0 {
		f.From = 0
	}
	if f.Type != TypeAck {
		f.Dup = false
	}
	return nil
}

// checkName validates an ID or room name: 1 to max bytes, no control
// characters.
func checkName(name string, v []byte, max, off int) error {
	if len(v) == 0 || len(v) > max {
		return &Error{Cause: ErrBadField, Field: name, Offset: off, Detail: "length must be 1.." + strconv.Itoa(max)}
	}
	for _, b := range v {
		if b < 0x20 || b == 0x7f {
			return &Error{Cause: ErrBadField, Field: name, Offset: off, Detail: "control character"}
		}
	}
	return nil
}

// decoder is a strict single-pass JSON object reader.
type decoder struct {
	p []byte
	i int
	f *Frame
}

func (d *decoder) syntax(detail string) error {
	return &Error{Cause: ErrSyntax, Offset: d.i, Detail: detail}
}

func (d *decoder) bad(name, detail string) error {
	return &Error{Cause: ErrBadField, Field: name, Offset: d.i, Detail: detail}
}

func (d *decoder) ws() {
	for d.i < len(d.p) {
		switch d.p[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// object reads the top-level object and nothing after it but whitespace.
func (d *decoder) object() error {
	d.ws()
	if d.i >= len(d.p) || d.p[d.i] != '{' {
		return d.syntax("expected {")
	}
	d.i++
	d.ws()
	if d.i < len(d.p) && d.p[d.i] == '}' {
		d.i++
	} else {
		for {
			if err := d.member(); err != nil {
				return err
			}
			d.ws()
			if d.i >= len(d.p) {
				return d.syntax("unterminated object")
			}
			c := d.p[d.i]
			d.i++
			if c == '}' {
				break
			}
			if c != ',' {
				d.i--
				return d.syntax("expected , or }")
			}
			d.ws()
		}
	}
	d.ws()
	if d.i != len(d.p) {
		return d.syntax("data after the object")
	}
	return nil
}

// member reads one "key": value pair of the top-level object.
func (d *decoder) member() error {
	if d.i >= len(d.p) || d.p[d.i] != '"' {
		return d.syntax("expected a field name")
	}
	key, err := d.str()
	if err != nil {
		return err
	}
	d.ws()
	if d.i >= len(d.p) || d.p[d.i] != ':' {
		return d.syntax("expected :")
	}
	d.i++
	d.ws()
	fl := fieldOf(key)
	if fl == 0 {
		return d.skip(0)
	}
	name := fl.name()
	if d.f.has&fl != 0 {
		return d.bad(name, "given twice")
	}
	d.f.has |= fl
	switch fl {
	case fDup:
		return d.dup(name)
	case fType, fID, fRoom, fBody:
		return d.text(fl, name)
	}
	return d.uintField(fl, name)
}

// fieldOf is the field named key, or 0 for a name the protocol does not
// know (its value is skipped).
func fieldOf(key []byte) field {
	switch string(key) { // no allocation: the compiler compares in place
	case "type":
		return fType
	case "id":
		return fID
	case "room":
		return fRoom
	case "body":
		return fBody
	case "seq":
		return fSeq
	case "last_seq":
		return fLastSeq
	case "through":
		return fThrough
	case "from":
		return fFrom
	case "dup":
		return fDup
	}
	return 0
}

// dup reads the value of "dup": true or false.
func (d *decoder) dup(name string) error {
	switch {
	case len(d.p)-d.i >= 4 && string(d.p[d.i:d.i+4]) == "true":
		d.f.Dup, d.i = true, d.i+4
	case len(d.p)-d.i >= 5 && string(d.p[d.i:d.i+5]) == "false":
		d.i += 5
	default:
		return d.bad(name, "must be true or false")
	}
	return nil
}

// text reads the string value of fl (type, id, room or body).
func (d *decoder) text(fl field, name string) error {
	if d.i >= len(d.p) || d.p[d.i] != '"' {
		return d.bad(name, "must be a string")
	}
	start := d.i
	v, err := d.str()
	if err != nil {
		return err
	}
	switch fl {
	case fType:
		d.f.Type = typeOf(v)
		if d.f.Type == TypeNone {
			return &Error{Cause: ErrUnknownType, Field: "type", Offset: start, Detail: strconv.QuoteToASCII(string(v))}
		}
	case fID:
		d.f.ID = v
	case fRoom:
		d.f.Room = v
	case fBody:
		d.f.Body = v
	}
	return nil
}

// uintField reads the unsigned value of fl (seq, last_seq, through or from).
func (d *decoder) uintField(fl field, name string) error {
	n, err := d.uint(name)
	if err != nil {
		return err
	}
	switch fl {
	case fSeq:
		d.f.Seq = n
	case fLastSeq:
		d.f.LastSeq = n
	case fThrough:
		d.f.Through = n
	case fFrom:
		d.f.From = n
	}
	return nil
}

func typeOf(v []byte) Type {
	for t := TypeMsg; t < numTypes; t++ {
		if string(v) == typeNames[t] {
			return t
		}
	}
	return TypeNone
}

// uint reads a non-negative JSON integer that fits in uint64.
func (d *decoder) uint(name string) (uint64, error) {
	start := d.i
	var n uint64
	for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
		c := uint64(d.p[d.i] - '0')
		if n > (1<<64-1-c)/10 {
			return 0, d.bad(name, "integer overflows uint64")
		}
		n = n*10 + c
		d.i++
	}
	switch {
	case d.i == start:
		return 0, d.bad(name, "must be a non-negative integer")
	case d.p[start] == '0' && d.i-start > 1:
		return 0, d.bad(name, "leading zero")
	}
	if d.i < len(d.p) {
		switch d.p[d.i] {
		case '.', 'e', 'E':
			return 0, d.bad(name, "must be an integer")
		}
	}
	return n, nil
}

// str reads a JSON string at d.i (which is '"') and returns its unescaped
// bytes: a slice of the input when it has no escapes, else of the scratch
// buffer.
func (d *decoder) str() ([]byte, error) {
	d.i++ // opening quote
	start := d.i
	for d.i < len(d.p) {
		c := d.p[d.i]
		switch {
		case c == '"':
			d.i++
			return d.p[start : d.i-1], nil
		case c == '\\':
			return d.strEscaped(start)
		case c < 0x20:
			return nil, d.syntax("control character in string")
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, size := utf8.DecodeRune(d.p[d.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, d.syntax("invalid UTF-8")
			}
			d.i += size
		}
	}
	return nil, d.syntax("unterminated string")
}

// strEscaped continues str from the first backslash, copying into the
// scratch buffer.
func (d *decoder) strEscaped(start int) ([]byte, error) {
	s := d.f.scratch
	from := len(s)
	s = append(s, d.p[start:d.i]...)
	for d.i < len(d.p) {
		c := d.p[d.i]
		switch {
		case c == '"':
			d.i++
			d.f.scratch = s
			return s[from:len(s):len(s)], nil
		case c == '\\':
			if d.i+1 >= len(d.p) {
				return nil, d.syntax("unterminated escape")
			}
			e := d.p[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				s = append(s, e)
			case 'b':
				s = append(s, '\b')
			case 'f':
				s = append(s, '\f')
			case 'n':
				s = append(s, '\n')
			case 'r':
				s = append(s, '\r')
			case 't':
				s = append(s, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return nil, d.syntax("bad \\u escape")
				}
				if r >= 0xd800 && r < 0xdc00 {
					// A high surrogate: pair it with a following low one.
					save := d.i
					if d.i+1 < len(d.p) && d.p[d.i] == '\\' && d.p[d.i+1] == 'u' {
						d.i += 2
						if lo, ok := d.hex4(); ok && lo >= 0xdc00 && lo < 0xe000 {
							r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
						} else {
							d.i = save
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				} else if r >= 0xdc00 && r < 0xe000 {
					r = utf8.RuneError
				}
				s = utf8.AppendRune(s, r)
			default:
				return nil, d.syntax("bad escape")
			}
		case c < 0x20:
			return nil, d.syntax("control character in string")
		case c < utf8.RuneSelf:
			s = append(s, c)
			d.i++
		default:
			r, size := utf8.DecodeRune(d.p[d.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, d.syntax("invalid UTF-8")
			}
			s = append(s, d.p[d.i:d.i+size]...)
			d.i += size
		}
	}
	return nil, d.syntax("unterminated string")
}

// hex4 reads four hex digits.
func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.p) {
		return 0, false
	}
	var r rune
	for _, c := range d.p[d.i : d.i+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	d.i += 4
	return r, true
}

// skip reads and discards any JSON value (an ignored field's).
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return d.syntax("nested too deep")
	}
	if d.i >= len(d.p) {
		return d.syntax("expected a value")
	}
	switch c := d.p[d.i]; {
	case c == '"':
		// Unescaped into scratch and dropped: cheap enough for a field
		// nobody reads. Reset scratch afterwards so it never grows past
		// the frame's length.
		n := len(d.f.scratch)
		_, err := d.str()
		d.f.scratch = d.f.scratch[:n]
		return err
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.i++
		d.ws()
		if d.i < len(d.p) && d.p[d.i] == end {
			d.i++
			return nil
		}
		for {
			if c == '{' {
				if d.i >= len(d.p) || d.p[d.i] != '"' {
					return d.syntax("expected a field name")
				}
				n := len(d.f.scratch)
				if _, err := d.str(); err != nil {
					return err
				}
				d.f.scratch = d.f.scratch[:n]
				d.ws()
				if d.i >= len(d.p) || d.p[d.i] != ':' {
					return d.syntax("expected :")
				}
				d.i++
				d.ws()
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			d.ws()
			if d.i >= len(d.p) {
				return d.syntax("unterminated value")
			}
			sep := d.p[d.i]
			d.i++
			if sep == end {
				return nil
			}
			if sep != ',' {
				d.i--
				return d.syntax("expected , or " + string(end))
			}
			d.ws()
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(d.p)-d.i >= len(lit) && string(d.p[d.i:d.i+len(lit)]) == lit {
				d.i += len(lit)
				return nil
			}
		}
		return d.syntax("expected a value")
	}
}

// number reads a JSON number (RFC 8259 grammar).
func (d *decoder) number() error {
	digits := func() int {
		n := 0
		for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.p[d.i] == '-' {
		d.i++
	}
	if d.i < len(d.p) && d.p[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return d.syntax("bad number")
	}
	if d.i < len(d.p) && d.p[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return d.syntax("bad number")
		}
	}
	if d.i < len(d.p) && (d.p[d.i] == 'e' || d.p[d.i] == 'E') {
		d.i++
		if d.i < len(d.p) && (d.p[d.i] == '+' || d.p[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return d.syntax("bad number")
		}
	}
	return nil
}
