package loadgen

import "math"

// state is where a client is in its life (see the package diagram).
type state uint8

const (
	_             state = iota // the zero state: before its ramp slot
	stWaiting                  // backing off before its next attempt
	stConnecting               // SYN sent, waiting for the connect to complete
	stHandshaking              // TCP up, upgrade request sent, waiting for 101
	stConnected                // WebSocket established
	stStopped                  // gave up: non-retryable failure or attempts exhausted
	stTLS                      // wss://: TCP up, TLS handshake queued or on a goroutine that owns the socket
)

// noTime marks an unset time offset.
const noTime = math.MinInt64

// client is one WebSocket client: 48 bytes, no goroutine, no buffer while
// idle. Times are nanoseconds from the run's start. A client is owned by
// exactly one reactor and touched only by its goroutine.
type client struct {
	attemptAt int64   // when the current attempt started
	downAt    int64   // when the last disconnect was detected, noTime if up or never up
	ext       *extras // buffers while a frame or answer is split, nil otherwise
	fd        int32   // socket, -1 when none
	timer     int32   // position in the reactor's timer heap, noTimer when none
	attempt   uint32  // retries since the last successful connect (0 after success)
	sockets   uint32  // sockets opened so far: numbers the handshake key and masks, and tells stale epoll events apart
	seq       uint32  // echo messages sent on the current connection
	state     state
	up        bool // its Up transition is recorded for the current connection (see handler.upAtUpgrade)
}

// extras holds what a client needs only while bytes are in flight: a
// partial upgrade answer or frame, unsent output, or the rest of a frame
// being skipped. Reactors recycle them.
type extras struct {
	in   []byte // a partial answer or frame, not yet complete
	out  []byte // bytes the socket did not take yet
	skip int64  // payload bytes of a discarded data frame still to come
}

// idle reports whether e holds nothing and can be recycled.
func (e *extras) idle() bool { return len(e.in) == 0 && len(e.out) == 0 && e.skip == 0 }
