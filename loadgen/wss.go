package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/clock"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
	"github.com/stampede-dev/stampede/wsdial"
)

// wssFleet runs wss:// clients. crypto/tls needs a blocking net.Conn, so
// each client is a goroutine on a wsdial.Conn instead of a state machine on
// a reactor; it follows the same life (ramp, MaxInflight for first
// connects, the policy or a Retry-After hint, stop on a non-retryable
// class) and records into the same Report through one mutex.
//
// It costs far more memory than the reactors: a goroutine stack, TLS state
// and bufio buffers per connected client, several KiB each where a reactor
// client costs about 200 bytes; an echo client adds a writer goroutine.
// Measure (loadgen/testdata/memprobe) before running many thousands. The
// handshake key is wsdial's random one, not seeded.
type wssFleet struct {
	f    *Fleet
	tls  *tls.Config // the fleet's, built once (Config.TLSConfig)
	mu   sync.Mutex  // guards rec.rep; rec.cnt is atomic
	rec  *recorder
	gate chan struct{}   // first connects in flight
	m    session.Machine // the session protocol spoken, nil for none

	epoch    time.Time
	startOff int64
}

func newWSSFleet(f *Fleet, tc *tls.Config) *wssFleet {
	if tc.ServerName == "" {
		tc.ServerName = f.url.Hostname() // set once: wsdial would copy the config per dial
	}
	return &wssFleet{f: f, tls: tc, rec: newRecorder(f.cfg.Start, f.cfg.Clients, f.cfg.HistInterval, f.streamed),
		gate: make(chan struct{}, f.cfg.MaxInflight), m: session.New(f.cfg.Session)}
}

func (w *wssFleet) now() int64 { return int64(time.Since(w.epoch)) + w.startOff }

// record runs fn on the recorder under the lock.
func (w *wssFleet) record(fn func(*recorder)) {
	w.mu.Lock()
	fn(w.rec)
	w.mu.Unlock()
}

func (w *wssFleet) run(ctx context.Context, epoch time.Time) (*results.Report, error) {
	w.epoch, w.startOff = epoch, int64(epoch.Sub(w.f.cfg.Start))
	w.rec.mu.Lock()
	w.rec.rep.Start = w.f.cfg.Start
	w.rec.mu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < w.f.cfg.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, i)
		}()
	}
	wg.Wait()
	if err := w.rec.close(); err != nil {
		return nil, err
	}
	return w.rec.rep, nil
}

// dialer returns client id's dialer: the fleet's settings, its source
// address and its X-Stampede-Client header.
func (w *wssFleet) dialer(id uint32) *wsdial.Dialer {
	cfg := &w.f.cfg
	h := cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("X-Stampede-Client", strconv.FormatUint(uint64(id), 10))
	d := &wsdial.Dialer{
		ConnectTimeout:   cfg.ConnectTimeout,
		HandshakeTimeout: cfg.HandshakeTimeout,
		SynRetries:       cfg.SynRetries,
		TLSConfig:        w.clientTLS(),
		Header:           h,
		Protocols:        offered(*cfg),
		MaxRetryAfter:    cfg.RetryAfterCap,
	}
	if n := len(cfg.SourceIPs); n > 0 {
		d.LocalAddr = cfg.SourceIPs[int(id)%n]
	}
	return d
}

// clientTLS returns a client's TLS config: the fleet's, with a session
// cache of its own (tlsconf.Session, one pointer, in a copy of the
// config) unless TLSNoResume.
func (w *wssFleet) clientTLS() *tls.Config {
	if w.f.cfg.TLSNoResume {
		return w.tls
	}
	tc := w.tls.Clone()
	tc.ClientSessionCache = new(tlsconf.Session)
	return tc
}

// client runs the fleet's i-th client until ctx is done or it stops.
func (w *wssFleet) client(ctx context.Context, i int) {
	cfg := &w.f.cfg
	id := cfg.FirstID + uint32(i)
	d := w.dialer(id)
	if cfg.Ramp > 0 && clock.Sleep(ctx, time.Duration(float64(i)/cfg.Ramp*float64(time.Second)-float64(w.now()))) != nil {
		return
	}
	select { // first connect: bounded in flight
	case w.gate <- struct{}{}:
	case <-ctx.Done():
		return
	}
	first := true
	attempt, downAt := 0, int64(noTime)
	for sockets := uint64(1); ; sockets++ {
		start := w.now()
		w.record(func(r *recorder) { r.attempt(start) })
		conn, err := d.Dial(ctx, cfg.URL)
		if first {
			<-w.gate
			first = false
		}
		now := w.now()
		if ctx.Err() != nil { // the run ended; not a failure
			w.rec.cnt.inflight.Add(-1)
			if conn != nil {
				conn.Close()
			}
			return
		}
		var f failure
		if err != nil {
			keepSession(d, err)
			f = wssFailure(err)
			w.record(func(r *recorder) { r.failure(f.class, now) })
		} else {
			if cfg.Policy.Resets(0) {
				attempt = 0
			}
			var ended bool
			if f, ended, downAt = w.connected(ctx, conn, id, sockets, start, now, downAt); !ended {
				return // the run ended
			}
			now = w.now()
			f.conn.Dropped, f.conn.Up = true, time.Duration(now-start)
			if attempt != 0 && cfg.Policy.Resets(f.conn.Up) {
				attempt = 0
			}
		}
		attempt++
		f.conn.SinceAttempt = time.Duration(now - start)
		if downAt != noTime {
			f.conn.SinceDrop = time.Duration(now - downAt)
		}
		dec := nextWait(cfg, id, attempt, f, now)
		if dec.Stop != backoff.Continue {
			w.record(func(r *recorder) { r.stop(f.class, f.text(), now, dec.Stop == backoff.Exhausted) })
			return
		}
		if clock.Sleep(ctx, dec.Delay) != nil {
			return
		}
	}
}

// keepSession tells the client's session cache, if any, that its
// handshake failed with err: a transport failure keeps the session
// crypto/tls forgot (tlsconf.Session.Failed).
func keepSession(d *wsdial.Dialer, err error) {
	if s, ok := d.TLSConfig.ClientSessionCache.(*tlsconf.Session); ok {
		s.Failed(err)
	}
}

// connected records client id's connection, dialed at start, established
// at now, holds it until it ends (ended true, with why) or the run ends
// (ended false), and records its end. It returns the client's last drop:
// now when it was up on this connection, else downAt (a connection that
// ended before its session was back has no Down).
func (w *wssFleet) connected(ctx context.Context, conn *wsdial.Conn, id uint32, sockets uint64, start, now, downAt int64) (f failure, ended bool, down int64) {
	var up bool
	if w.m == nil {
		w.record(func(r *recorder) { r.success(id, start, now, downAt) })
	} else {
		w.record(func(r *recorder) { r.upgraded(start, now) })
	}
	w.rec.tlsHandshake(now, conn.TLSResumed())
	if w.m == nil {
		f, ended = w.hold(ctx, conn, id, sockets)
		up = true
	} else {
		f, ended, up = w.holdSession(ctx, conn, id, downAt)
	}
	if !ended {
		return f, false, downAt
	}
	end := w.now()
	w.record(func(r *recorder) {
		if up {
			r.disconnect(id, f.class, end)
		} else {
			r.ended(f.class, end)
		}
	})
	if up {
		return f, true, end
	}
	return f, true, downAt
}

// wssFailure turns a wsdial error into a failure.
func wssFailure(err error) failure {
	var ce *connerr.Error
	if !errors.As(err, &ce) {
		ce = connerr.Wrap(err, connerr.PhaseDial)
	}
	return failure{class: ce.Class, status: ce.Status, hint: ce.RetryAfter, err: ce.Err}
}

// hold keeps an established connection until it ends (ended true, with
// why) or ctx is done (ended false). Echo mode sends stamped messages from
// a second goroutine and times their echoes.
func (w *wssFleet) hold(ctx context.Context, conn *wsdial.Conn, id uint32, sockets uint64) (f failure, ended bool) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	cfg := &w.f.cfg
	done := make(chan struct{})
	var wg sync.WaitGroup
	if cfg.Mode == spec.ModeEcho {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.send(conn, id, sockets, done)
		}()
	}
	ka := startWSSKeepalive(cfg, conn)
	var ce *connerr.Error
	for {
		p, _, err := conn.ReadMessage()
		if err != nil {
			if !errors.As(err, &ce) {
				ce = nil // closed by us: the run ended
			}
			break
		}
		if _, sent, due, ok := readStamp(p); ok && cfg.Mode == spec.ModeEcho {
			now := w.now()
			w.record(func(r *recorder) {
				r.delivered(now, time.Duration(max(now-sent, 0)), time.Duration(max(now-due, 0)))
			})
		}
	}
	close(done)
	wg.Wait()
	if ka.stop() && ctx.Err() == nil {
		return failure{class: connerr.PingTimeout, err: errNoPong(cfg.PongTimeout)}, true
	}
	if ce == nil || ctx.Err() != nil {
		return failure{}, false
	}
	f = failure{class: ce.Class, err: ce.Err}
	var closed wsutil.ClosedError
	if errors.As(ce.Err, &closed) {
		f.hint = connerr.CloseHint(f.class, closed.Reason, cfg.RetryAfterCap)
		f.conn.Close = int(closed.Code) // a preset's close-code rules, as on a reactor
	}
	return f, true
}

// send writes echo stamps every 1/MsgRate from a seeded phase until done;
// sockets numbers the client's connection, as on a reactor. As on a
// reactor, each stamp carries its scheduled time (due), and a write that
// blocked past the next slots sends one message, scheduled at the first.
func (w *wssFleet) send(conn *wsdial.Conn, id uint32, sockets uint64, done <-chan struct{}) {
	cfg := &w.f.cfg
	interval := time.Duration(float64(time.Second) / cfg.MsgRate)
	phase := time.Duration(backoff.U(cfg.Seed, backoff.StreamMessage, uint64(id), sockets) * float64(interval))
	due := w.now() + int64(phase)
	t := time.NewTimer(phase)
	defer t.Stop()
	p := make([]byte, cfg.MsgSize)
	for seq := uint32(1); ; seq++ {
		select {
		case <-done:
			return
		case <-t.C:
		}
		now := w.now()
		putStamp(p, seq, now, due)
		if conn.WriteMessage(ws.OpText, p) != nil {
			return
		}
		w.record(func(r *recorder) { r.sent(now) })
		after := w.now()
		if due += int64(interval); due <= after {
			due = after + int64(interval)
		}
		t.Reset(time.Duration(due - after))
	}
}
