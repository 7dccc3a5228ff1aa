package loadgen

import (
	"bytes"
	"crypto/tls"
	"reflect"
	"unsafe"
)

// tlsBufs locates a tls.Conn's input buffers. crypto/tls keeps their
// capacity once read: rawInput (records as they arrive) and hand
// (handshake messages) stay as large as the server's handshake flight,
// its certificate chain, about 3 KiB a connection with a P-256
// certificate, for the life of an idle connection; input is a view of
// rawInput's array. They are found by reflection, by name and type, once;
// on a Go whose tls.Conn has no such fields nothing is released
// (TestTLSBuffersFound says so).
var tlsBufs = findTLSBuffers()

type tlsBufOffsets struct {
	rawInput, input, hand uintptr
	ok                    bool
}

func findTLSBuffers() tlsBufOffsets {
	t := reflect.TypeFor[tls.Conn]()
	var o tlsBufOffsets
	found := 0
	for _, f := range []struct {
		name string
		typ  reflect.Type
		off  *uintptr
	}{
		{"rawInput", reflect.TypeFor[bytes.Buffer](), &o.rawInput},
		{"input", reflect.TypeFor[bytes.Reader](), &o.input},
		{"hand", reflect.TypeFor[bytes.Buffer](), &o.hand},
	} {
		if sf, ok := t.FieldByName(f.name); ok && sf.Type == f.typ {
			*f.off = sf.Offset
			found++
		}
	}
	o.ok = found == 3
	return o
}

// releaseTLSBuffers lets tc's input buffers go when they hold nothing: the
// next record allocates a buffer of its size. Only on the goroutine that
// uses tc, between its calls.
func releaseTLSBuffers(tc *tls.Conn) {
	if !tlsBufs.ok {
		return
	}
	p := unsafe.Pointer(tc)
	if raw := (*bytes.Buffer)(unsafe.Add(p, tlsBufs.rawInput)); raw.Len() == 0 {
		*raw = bytes.Buffer{}
	}
	if in := (*bytes.Reader)(unsafe.Add(p, tlsBufs.input)); in.Len() == 0 {
		*in = bytes.Reader{}
	}
	if hand := (*bytes.Buffer)(unsafe.Add(p, tlsBufs.hand)); hand.Len() == 0 {
		*hand = bytes.Buffer{}
	}
}

// tlsBufferBytes returns the capacity tc's input buffers hold (tests).
func tlsBufferBytes(tc *tls.Conn) int {
	p := unsafe.Pointer(tc)
	return (*bytes.Buffer)(unsafe.Add(p, tlsBufs.rawInput)).Cap() + (*bytes.Buffer)(unsafe.Add(p, tlsBufs.hand)).Cap()
}
