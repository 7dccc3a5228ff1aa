package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// JoinConfig is how an agent joins a run (stampede agent --nats).
type JoinConfig struct {
	// NATS is the server's URL; Creds its credentials file, if it needs
	// one (else a credential derived from the token is presented to the
	// server: the embedded server requires it).
	NATS  string
	Creds string
	// Token is the run's secret (--token-file).
	Token []byte
	// TLSCert and TLSKey are this agent's certificate, CA the authority
	// that signed the server's.
	TLSCert, TLSKey, CA string
	// Name, Role and Capacity are what the agent declares: its name in
	// the run, "loadgen", "target" or "any", and how many clients it
	// takes (0: not declared).
	Name     string
	Role     string
	Capacity int
	// SourceIPs are the addresses this agent's clients connect from.
	SourceIPs []netip.Addr
	// JoinTimeout bounds the wait for a coordinator (it may start after
	// its agents); zero means DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Log, if set, hears what the agent does.
	Log func(format string, args ...any)
}

// DefaultJoinTimeout is how long an agent waits for its coordinator.
const DefaultJoinTimeout = 10 * time.Minute

// Roles an agent may declare.
const (
	RoleLoadgen = "loadgen"
	RoleTarget  = "target"
	RoleAny     = "any"
)

// RefusedError is a join the coordinator (or the NATS server) refused: a
// wrong token, a name taken, a full run.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// Joined is an agent that joined a run: its session with the coordinator
// and its clock estimate.
type Joined struct {
	s  *session
	nc *nats.Conn
	// Offset is the coordinator's clock minus this agent's, within Bound.
	Offset, Bound time.Duration
	// Addr is this agent's IP address on its way to the NATS server.
	Addr string
}

// localAddr is a dialer that remembers the local address of its last
// connection: the agent's address as other hosts see it.
type localAddr struct{ ip atomic.Value }

func (d *localAddr) Dial(network, address string) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, 5*time.Second)
	if err == nil {
		if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
			d.ip.Store(a.IP.String())
		}
	}
	return c, err
}

// Join connects to the NATS server, presents the token and waits for the
// coordinator to take this agent, then estimates the clock offset.
func Join(ctx context.Context, cfg JoinConfig) (*Joined, error) {
	switch cfg.Role {
	case RoleLoadgen, RoleTarget, RoleAny:
	default:
		return nil, spec.Errorf("Join.Role", "%q: loadgen, target or any", cfg.Role)
	}
	if cfg.Name == "" {
		return nil, spec.Errorf("Join.Name", "required (or STAMPEDE_AGENT_NAME)")
	}
	if cfg.Capacity < 0 {
		return nil, spec.Errorf("Join.Capacity", "%d: must not be negative", cfg.Capacity)
	}
	timeout := cfg.JoinTimeout
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	deadline := time.Now().Add(timeout)
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			cfg.Log(format, args...)
		}
	}
	keys := deriveKeys(cfg.Token)
	d := &localAddr{}
	var offline atomic.Int64
	opts := []nats.Option{nats.Name("stampede agent " + cfg.Name), nats.SetCustomDialer(d),
		nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { offline.CompareAndSwap(0, time.Now().UnixNano()) }),
		nats.ReconnectHandler(func(*nats.Conn) { offline.Store(0) })}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	} else {
		opts = append(opts, nats.Token(keys.nats))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	var nc *nats.Conn
	for {
		var err error
		nc, err = nats.Connect(cfg.NATS, opts...)
		if err == nil {
			break
		}
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, &RefusedError{fmt.Sprintf("the NATS server at %s refused this agent's credentials (authorization violation): wrong token file or NATS credentials file", redact.URL(cfg.NATS))}
		}
		if time.Now().After(deadline) {
			return nil, spec.Errorf("Join.NATS", "%s: %s", redact.URL(cfg.NATS), natsScrub(cfg.NATS, err))
		}
		logf("waiting for the NATS server at %s: %s", redact.URL(cfg.NATS), natsScrub(cfg.NATS, err))
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	j, err := join(ctx, nc, cfg, keys.sign, d, deadline, logf, func() time.Time {
		if n := offline.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Time{}
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return j, nil
}

// natsScrub is a NATS client's error as printed: without the secrets of
// the server's URL, which its text may quote.
func natsScrub(natsURL string, err error) string {
	return redact.Policy{Values: redact.Values(nil, nil, natsURL)}.Text(err.Error())
}

func join(ctx context.Context, nc *nats.Conn, cfg JoinConfig, signKey []byte, d *localAddr, deadline time.Time, logf func(string, ...any), offline func() time.Time) (*Joined, error) {
	sid, nonceA := randomHex(16), randomHex(16)
	down, err := nc.SubscribeSync(downSubject(sid))
	if err != nil {
		return nil, err
	}
	_ = down.SetPendingLimits(-1, -1)
	host, _ := os.Hostname()
	addr, _ := d.ip.Load().(string)
	he := hello{V: Version, SID: sid, Nonce: nonceA, Name: cfg.Name, Role: cfg.Role, Capacity: cfg.Capacity,
		Host: host, PID: os.Getpid(), Addr: addr, SourceIPs: cfg.SourceIPs, EphemeralPorts: hoststat.EphemeralPorts()}
	body, _ := json.Marshal(he)

	ch, err := sayHello(ctx, nc, cfg, signKey, down, body, deadline, logf)
	if err != nil {
		return nil, err
	}
	key := sessionKey(signKey, sid, nonceA, ch.Nonce)
	if err := nc.PublishMsg(newMsg(key, upSubject(sid), 0, kAuth, 0, []byte(ch.Nonce))); err != nil {
		return nil, err
	}
	s := newSession(nc, key, upSubject(sid), down, 0, 0)
	s.offline = offline
	welcome := make(chan struct{}, 1)
	refused := make(chan string, 1)
	clocks := make(chan clockMsg, ClockRounds)
	s.onMsg = func(p parsed) {
		switch p.kind {
		case kWelcome:
			welcome <- struct{}{}
		case kRefused:
			refused <- string(p.body)
		case kClock:
			var c clockMsg
			if json.Unmarshal(p.body, &c) == nil {
				select {
				case clocks <- c:
				default:
				}
			}
		}
	}
	go s.run()
	select {
	case <-welcome:
	case why := <-refused:
		why = Printable(why)
		s.end(errors.New(why))
		return nil, &RefusedError{why}
	case <-s.dead:
		return nil, fmt.Errorf("joining: %w", s.err())
	case <-time.After(10 * time.Second):
		s.end(errors.New("no welcome"))
		return nil, errors.New("the coordinator did not complete the join in 10s")
	}
	off, err := estimate(s, clocks)
	if err != nil {
		s.end(err)
		return nil, err
	}
	if err := s.sendJSON(kOffset, off); err != nil {
		s.end(err)
		return nil, err
	}
	run := "joined"
	if ch.RunID != "" {
		run = "joined run " + Printable(ch.RunID)
	}
	logf("%s at %s as %q (%s); clock offset %+.3f ms ± %.3f ms", run, redact.URL(cfg.NATS), cfg.Name, cfg.Role, ms(off.Offset), ms(off.Bound))
	s.shift.Store(int64(off.Offset))
	addr, _ = d.ip.Load().(string)
	return &Joined{s: s, nc: nc, Offset: off.Offset, Bound: off.Bound, Addr: addr}, nil
}

// sayHello says hello on the join subject until a coordinator of this run
// answers with its challenge, which it returns.
func sayHello(ctx context.Context, nc *nats.Conn, cfg JoinConfig, signKey []byte, down *nats.Subscription, body []byte, deadline time.Time, logf func(string, ...any)) (challenge, error) {
	// Say hello until a coordinator answers. A refusal signed with the
	// run's key is final. An unsigned one may come from another run's
	// coordinator on the same server, or from anyone who can publish
	// there: it is only remembered, for the error if no coordinator of
	// this run answers before the join timeout.
	var ch challenge
	var unsigned string
	for answered := false; !answered; {
		if err := nc.PublishMsg(&nats.Msg{Subject: JoinSubject, Reply: down.Subject, Data: body,
			Header: newMsg(signKey, JoinSubject, 0, kHello, 0, body).Header}); err != nil {
			return ch, err
		}
		resend := time.Now().Add(2 * time.Second)
		for !answered {
			if time.Now().After(deadline) {
				if unsigned != "" {
					return ch, &RefusedError{fmt.Sprintf("no coordinator on %s took this agent in time; one that cannot sign for this run answered: %s", redact.URL(cfg.NATS), unsigned)}
				}
				return ch, fmt.Errorf("no coordinator on %s took this agent in time: is a run waiting for agents there?", redact.URL(cfg.NATS))
			}
			if ctx.Err() != nil {
				return ch, ctx.Err()
			}
			if time.Now().After(resend) {
				break
			}
			m, err := down.NextMsg(250 * time.Millisecond)
			if errors.Is(err, nats.ErrTimeout) {
				continue
			}
			if err != nil {
				return ch, err
			}
			p, verr := verify(signKey, m)
			switch {
			case verr == nil && p.kind == kRefused: // this run's coordinator refused: final
				return ch, &RefusedError{Printable(string(p.body))}
			case verr != nil && m.Header.Get(hKind) == kRefused:
				if unsigned == "" {
					unsigned = Printable(string(m.Data))
					logf("ignoring an unsigned refusal (not from this run's coordinator): %s", unsigned)
				}
			case verr != nil:
				if unsigned == "" {
					unsigned = "the coordinator refused the token: it is not this run's (check the token file)"
				}
			case p.kind == kChallenge && json.Unmarshal(p.body, &ch) == nil && ch.Nonce != "":
				answered = true
			}
		}
	}
	return ch, nil
}

// estimate makes ClockRounds round trips and keeps the shortest: the
// offset is the coordinator's time minus the midpoint of the round trip,
// wrong by at most half of it.
func estimate(s *session, clocks <-chan clockMsg) (offsetMsg, error) {
	best := offsetMsg{RTT: -1}
	for range ClockRounds {
		t0 := time.Now()
		if err := s.sendJSON(kClock, clockMsg{T0: t0}); err != nil {
			return best, err
		}
		select {
		case c := <-clocks:
			rtt := time.Since(t0)
			if best.RTT < 0 || rtt < best.RTT {
				mid := t0.Add(rtt / 2)
				best = offsetMsg{Offset: c.TC.Sub(mid.Round(0)), Bound: rtt / 2, RTT: rtt}
			}
		case <-s.dead:
			return best, s.err()
		case <-time.After(5 * time.Second):
			return best, errors.New("the coordinator did not answer a clock round trip in 5s")
		}
	}
	return best, nil
}

// Serve runs every role the coordinator places on this agent, each on its
// channel with serve, until the coordinator ends the session and every
// role is over. It returns nil when the coordinator said bye, else why the
// session ended (the coordinator went silent: every role was stopped).
func (j *Joined) Serve(ctx context.Context, serve func(ctx context.Context, ch Channel) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	on := func(c *channel) {
		if c.served.Swap(true) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := serve(ctx, c)
			_ = c.Close()
			if err != nil && !errors.Is(err, io.EOF) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	j.s.mu.Lock()
	j.s.onChannel = on
	early := make([]*channel, 0, len(j.s.chans))
	for _, c := range j.s.chans {
		early = append(early, c) // opened before Serve
	}
	j.s.mu.Unlock()
	for _, c := range early {
		on(c)
	}
	select {
	case <-j.s.dead:
	case <-ctx.Done():
		j.s.end(ctx.Err())
	}
	wg.Wait()
	_ = j.nc.FlushTimeout(time.Second)
	j.nc.Close()
	if err := j.s.err(); !errors.Is(err, ErrBye) {
		return fmt.Errorf("the coordinator is gone (%v): load stopped", err)
	}
	return errors.Join(errs...)
}

// Leave ends the session (the agent stops) and closes the connection.
func (j *Joined) Leave() {
	j.s.bye()
	j.nc.Close()
}
