package loadgen

// The reactor's side of its TLS 1.3 record layer (tlsrecord.go): a
// connection taken over from crypto/tls (tlsswap.go) reads records from
// the raw socket (readable), keeping a partial one only while it
// straddles reads, and seals what it sends into the reactor's send path.

// maxKeptRaw bounds the capacity a client's partial record keeps.
const maxKeptRaw = 2 * (recordHeaderLen + maxCiphertext)

// records opens the whole records of data, after the client's partial
// record if it has one, and keeps what is left of a partial one. It
// reports false when the connection ended.
func (r *reactor) records(j int32, data []byte, now int64) bool {
	c, t := &r.clients[j], &r.tls[j]
	sock := c.sockets
	buf := data
	if len(t.raw) > 0 {
		t.raw = append(t.raw, data...)
		buf = t.raw
	}
	o := opener{k: &t.keys}
	for {
		n, err := recordLen(buf)
		if err != nil {
			r.lost(j, err, now)
			return false
		}
		if n == 0 || len(buf) < n {
			break
		}
		if !r.record(j, &o, buf[:n], now) || c.sockets != sock || c.fd < 0 {
			return false
		}
		buf = buf[n:]
	}
	switch {
	case len(buf) == 0:
		t.raw = nil
	case len(t.raw) > 0 && cap(t.raw) <= maxKeptRaw: // buf is t.raw's tail
		t.raw = t.raw[:copy(t.raw, buf)]
	default:
		t.raw = append([]byte(nil), buf...)
	}
	return true
}

// record handles one whole record: application data goes where the
// socket's bytes go for ws://, close_notify ends the stream, any other
// alert fails the connection. It reports false when the connection ended.
func (r *reactor) record(j int32, o *opener, rec []byte, now int64) bool {
	typ, pt, err := o.open(rec)
	if err != nil {
		r.lost(j, err, now)
		return false
	}
	switch typ {
	case recordApplication:
		if len(pt) > 0 {
			r.received(j, pt, now)
		}
		return true
	case recordAlert:
		switch {
		case len(pt) != 2:
			r.lost(j, errDecodeRecord, now)
		case pt[1] == alertCloseNotify:
			r.ended(j, now) // as crypto/tls's io.EOF
		default:
			r.lost(j, errAlert(pt[1]), now)
		}
		return false
	case recordHandshake:
		return r.postHandshake(j, o, pt, now)
	}
	r.lost(j, errRecordType, now)
	return false
}

// postHandshake handles the handshake messages of one record: session
// tickets are dropped (the session cache holds the one crypto/tls took);
// a KeyUpdate moves the read direction to its next secret and, when the
// server asks, answers with one and moves the write direction.
func (r *reactor) postHandshake(j int32, o *opener, msgs []byte, now int64) bool {
	t := &r.tls[j]
	for len(msgs) > 0 {
		if len(msgs) < 4 {
			r.lost(j, errHandshakeSplit, now)
			return false
		}
		n := 4 + (int(msgs[1])<<16 | int(msgs[2])<<8 | int(msgs[3]))
		if len(msgs) < n {
			r.lost(j, errHandshakeSplit, now)
			return false
		}
		msg := msgs[:n]
		msgs = msgs[n:]
		switch {
		case msg[0] == hsNewSessionTicket:
		case msg[0] == hsKeyUpdate && n == 5 && msg[4] <= 1 && len(msgs) == 0:
			t.keys.rd.update(t.keys.suite)
			o.rekeyed()
			if msg[4] == 1 && !r.keyUpdate(j, now) {
				return false
			}
		default:
			r.lost(j, errRecordType, now)
			return false
		}
	}
	return true
}

// keyUpdate sends a KeyUpdate (update_not_requested) under the current
// write secret, then moves to the next. It reports false when the
// connection ended.
func (r *reactor) keyUpdate(j int32, now int64) bool {
	t := &r.tls[j]
	r.sbuf = t.keys.seal(r.sbuf[:0], recordHandshake, []byte{hsKeyUpdate, 0, 0, 1, 0})
	t.keys.wr.update(t.keys.suite)
	if err := r.sendRaw(j, r.sbuf); err != nil {
		r.lost(j, err, now)
		return false
	}
	return true
}

// sendTLS writes p to a wss:// client's connection: through its tls.Conn
// while crypto/tls runs it, else sealed into records.
func (r *reactor) sendTLS(j int32, p []byte) error {
	t := &r.tls[j]
	if t.conn != nil {
		_, err := t.conn.Write(p)
		return err
	}
	r.sbuf = t.keys.seal(r.sbuf[:0], recordApplication, p)
	return r.sendRaw(j, r.sbuf)
}
