package loadgen

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"hash"
	"net"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// The TLS 1.3 record layer (RFC 8446 5), which the reactor drives itself
// once a connection's handshake is over (tlsswap.go): a connection keeps
// its two traffic secrets and sequence numbers, no cipher state. Each
// batch of records builds its AEAD from the secret and lets it go, so an
// idle connection holds about 110 bytes of TLS state, where crypto/tls's
// Conn holds its ciphers, buffers and secrets (about 3.3 KB).

// Record layer constants (RFC 8446 5.1, 5.2).
const (
	recordHeaderLen = 5
	maxPlaintext    = 1 << 14
	maxCiphertext   = maxPlaintext + 256

	recordAlert       = 21
	recordHandshake   = 22
	recordApplication = 23

	hsNewSessionTicket = 4
	hsKeyUpdate        = 24

	alertCloseNotify = 0
)

// Errors of the record layer, as crypto/tls words them (a local alert).
var (
	errBadRecordMAC  = &net.OpError{Op: "local error", Err: tls.AlertError(20)}
	errRecordType    = &net.OpError{Op: "local error", Err: tls.AlertError(10)} // unexpected_message
	errRecordTooLong = &net.OpError{Op: "local error", Err: tls.AlertError(22)} // record_overflow
	errDecodeRecord  = &net.OpError{Op: "local error", Err: tls.AlertError(50)} // decode_error
)

// trafficKeys is one direction of a connection's record layer: its
// current traffic secret (RFC 8446 7.1) and the next record's sequence
// number. The secret's length is the suite's hash's.
type trafficKeys struct {
	secret [48]byte
	seq    uint64
}

// recordKeys are both directions of a TLS 1.3 connection; suite 0 means
// none (the connection runs on crypto/tls, or has none).
type recordKeys struct {
	suite uint16
	rd    trafficKeys // the server's: records read
	wr    trafficKeys // the client's: records written
}

// suiteParams returns a TLS 1.3 suite's hash and key length; ok is false
// for a suite the record layer does not take over.
func suiteParams(suite uint16) (h func() hash.Hash, keyLen int, ok bool) {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256:
		return sha256.New, 16, true
	case tls.TLS_AES_256_GCM_SHA384:
		return sha512.New384, 32, true
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return sha256.New, chacha20poly1305.KeySize, true
	}
	return nil, 0, false
}

// expandLabel is HKDF-Expand-Label (RFC 8446 7.1) with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	info := make([]byte, 0, 4+len("tls13 ")+len(label))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len("tls13 ")+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, 0) // context
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic("loadgen: HKDF-Expand-Label: " + err.Error()) // only for n too long: a bug
	}
	return out
}

// aead returns the AEAD and the iv of one direction's current secret
// (RFC 8446 7.3).
func (k *trafficKeys) aead(suite uint16) (cipher.AEAD, []byte) {
	h, keyLen, _ := suiteParams(suite)
	secret := k.secret[:h().Size()]
	key := expandLabel(h, secret, "key", keyLen)
	iv := expandLabel(h, secret, "iv", 12)
	if suite == tls.TLS_CHACHA20_POLY1305_SHA256 {
		a, err := chacha20poly1305.New(key)
		if err != nil {
			panic("loadgen: " + err.Error())
		}
		return a, iv
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("loadgen: " + err.Error())
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic("loadgen: " + err.Error())
	}
	return a, iv
}

// update moves one direction to its next traffic secret (RFC 8446 7.2,
// a KeyUpdate): its sequence number starts again at 0.
func (k *trafficKeys) update(suite uint16) {
	h, _, _ := suiteParams(suite)
	n := h().Size()
	copy(k.secret[:], expandLabel(h, k.secret[:n], "traffic upd", n))
	k.seq = 0
}

// nonce writes the per-record nonce, iv XOR the sequence number
// (RFC 8446 5.3), into n and advances the sequence number.
func (k *trafficKeys) nonce(n *[12]byte, iv []byte) []byte {
	copy(n[:], iv)
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], k.seq)
	for i := range s {
		n[4+i] ^= s[i]
	}
	k.seq++
	return n[:]
}

// seal appends p to dst as records of content type typ, at most
// maxPlaintext bytes of p each, sealed with the write direction.
func (k *recordKeys) seal(dst []byte, typ byte, p []byte) []byte {
	a, iv := k.wr.aead(k.suite)
	var n [12]byte
	for first := true; first || len(p) > 0; first = false {
		chunk := p[:min(len(p), maxPlaintext)]
		p = p[len(chunk):]
		hdr := len(dst)
		dst = append(dst, recordApplication, 3, 3, 0, 0)
		binary.BigEndian.PutUint16(dst[hdr+3:], uint16(len(chunk)+1+a.Overhead()))
		body := len(dst)
		dst = append(dst, chunk...)
		dst = append(dst, typ)
		dst = slices.Grow(dst, a.Overhead()) // sealed in place
		sealed := a.Seal(dst[body:body], k.wr.nonce(&n, iv), dst[body:], dst[hdr:body])
		dst = dst[:body+len(sealed)]
	}
	return dst
}

// recordLen returns the length of the record at the start of b, header
// included, or 0 when b does not hold its header yet.
func recordLen(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return 0, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:]))
	if n > maxCiphertext {
		return 0, errRecordTooLong
	}
	return recordHeaderLen + n, nil
}

// opener opens the records of one batch read from the socket with one
// AEAD, built at the first record.
type opener struct {
	k  *recordKeys
	a  cipher.AEAD
	iv []byte
}

// open decrypts the whole record rec in place and returns its inner
// content type and plaintext (RFC 8446 5.2, 5.4).
func (o *opener) open(rec []byte) (byte, []byte, error) {
	if rec[0] != recordApplication {
		return 0, nil, errRecordType
	}
	if o.a == nil {
		o.a, o.iv = o.k.rd.aead(o.k.suite)
	}
	var n [12]byte
	pt, err := o.a.Open(rec[recordHeaderLen:recordHeaderLen], o.k.rd.nonce(&n, o.iv), rec[recordHeaderLen:], rec[:recordHeaderLen])
	if err != nil {
		return 0, nil, errBadRecordMAC
	}
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return 0, nil, errRecordType
	}
	return pt[i], pt[:i], nil
}

// rekeyed drops the AEAD after a KeyUpdate of the read direction.
func (o *opener) rekeyed() { o.a, o.iv = nil, nil }

// errAlert is the error of an alert the server sent other than
// close_notify, as crypto/tls words it.
func errAlert(desc byte) error {
	return &net.OpError{Op: "remote error", Err: tls.AlertError(desc)}
}

// errHandshakeSplit is a post-handshake message split across records,
// which the record layer does not gather.
var errHandshakeSplit = errors.New("tls: a post-handshake message split across records")
