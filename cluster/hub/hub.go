package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// Config is how a coordinator's Hub reaches its agents.
type Config struct {
	// Listen is where the embedded NATS server listens ("HOST:PORT");
	// empty means a free port on 127.0.0.1 (never 4222, where a NATS
	// server of the machine may run). Unused with NATS.
	Listen string
	// InsecureListen allows a Listen address beyond loopback without TLS
	// (TLSCert): the agents' messages, bodies unencrypted, would cross the
	// network in clear. Without it such a Listen is refused; with it the
	// hub logs a warning each run.
	InsecureListen bool
	// NATS, if set, is the URL of an existing NATS server to use instead
	// of the embedded one; Creds is its credentials file (nats.UserCredentials).
	NATS  string
	Creds string
	// TokenFile holds the run's token: read when it exists, else a new
	// random token is written to it with mode 0600. Required.
	TokenFile string
	// TLSCert and TLSKey make the embedded server speak TLS; CA, if set,
	// verifies the server (an external one too) and, on the embedded
	// server, requires agents to present a certificate it signed.
	TLSCert, TLSKey, CA string
	// RunID names the run in the agents' logs.
	RunID string
	// Log, if set, hears of agents joining, refused and gone.
	Log func(format string, args ...any)
	// JoinCommand, if set, spells what to run on another host to join
	// this run, in the caller's command language (the library knows no
	// command line); nil: the join's parts in plain words.
	JoinCommand func(JoinHint) string
}

// JoinHint is what an agent on another host needs to join a run: the NATS
// URL, the token file (a copy of it there), and the credentials and CA
// files when the run uses them (empty when not).
type JoinHint struct {
	NATS, TokenFile, Creds, CA string
}

// Hub is the coordinator's side: a NATS connection (and the embedded
// server), the join subject, and the members that joined.
type Hub struct {
	cfg    Config
	keys   runKeys // derived from the run's token
	srv    *server.Server
	nc     *nats.Conn
	url    string
	sub    *nats.Subscription
	wrote  bool
	closed atomic.Bool

	mu      sync.Mutex
	want    int
	pending map[string]string // session ID -> agent name, between hello and membership
	members []*Member
	changed chan struct{}
}

// Member is an agent that joined: what it declared, its clock estimate,
// and its session, on which each role placed on it gets a channel.
type Member struct {
	// Name, Role ("loadgen", "target" or "any"), Capacity (clients; 0:
	// not declared), Host, PID are what the agent declared.
	Name     string
	Role     string
	Capacity int
	Host     string
	PID      int
	// Addr is the agent's IP address as its NATS connection shows it.
	Addr string
	// SourceIPs are the addresses its loadgen shares' clients connect
	// from (stampede agent --source-ips); empty: the kernel's choice.
	SourceIPs []netip.Addr
	// EphemeralPorts is the size of its host's ephemeral port range, as
	// the agent read it there (0: not known, an older agent).
	EphemeralPorts int
	// Offset is the coordinator's clock minus the agent's, within
	// OffsetError (half the round trip of the best of ClockRounds).
	Offset, OffsetError time.Duration

	s      *session
	nextCh atomic.Int32
	joined chan struct{}
}

// Channel opens a new channel to the member: the conversation of one role
// placed on it (agent.OverLink reads it).
func (m *Member) Channel() Channel {
	return m.s.channel(int(m.nextCh.Add(1)), true)
}

// Gone is closed when the member's session ended.
func (m *Member) Gone() <-chan struct{} { return m.s.dead }

// Err says why the member's session ended (nil while it lasts).
func (m *Member) Err() error { return m.s.err() }

// ClockOffset returns the member's clock estimate (cluster.Agent uses it).
func (m *Member) ClockOffset() (offset, bound time.Duration) { return m.Offset, m.OffsetError }

// New starts a hub: the embedded NATS server unless cfg.NATS is set, the
// token, and the join subject. Close releases it.
func New(cfg Config) (*Hub, error) {
	if cfg.TokenFile == "" {
		return nil, spec.Errorf("Hub.TokenFile", "required with {Storm.Agents}")
	}
	h := &Hub{cfg: cfg, pending: map[string]string{}, changed: make(chan struct{}, 1)}
	var (
		token []byte
		err   error
	)
	if _, serr := os.Stat(cfg.TokenFile); serr == nil {
		token, err = ReadToken(cfg.TokenFile)
	} else {
		token, err = WriteToken(cfg.TokenFile)
		h.wrote = true
	}
	if err != nil {
		return nil, err
	}
	h.keys = deriveKeys(token)
	opts := []nats.Option{nats.Name("stampede coordinator"), nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond)}
	connectURL := cfg.NATS
	if cfg.NATS != "" {
		if cfg.CA != "" {
			opts = append(opts, nats.RootCAs(cfg.CA))
		}
		h.url = redact.URL(cfg.NATS) // printed: never its password
		if cfg.Creds != "" {
			opts = append(opts, nats.UserCredentials(cfg.Creds))
		}
		if cfg.TLSCert != "" {
			opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
		}
	} else {
		if err := h.startServer(); err != nil {
			return nil, err
		}
		// The coordinator reaches its own server in-process: no socket,
		// so no TLS to verify (the server's certificate need not name
		// the address it listens on here, nor be signed by a CA this
		// host trusts) and no client certificate to present.
		opts = append(opts, nats.Token(h.keys.nats), nats.InProcessServer(h.srv))
		connectURL = "nats://" + strings.SplitN(h.url, "://", 2)[1]
	}
	if h.nc, err = nats.Connect(connectURL, opts...); err != nil {
		h.Close()
		return nil, spec.Errorf("Hub.NATS", "%s: %s", h.url, redact.Policy{Values: redact.Values(nil, nil, cfg.NATS)}.Text(err.Error()))
	}
	if h.sub, err = h.nc.Subscribe(JoinSubject, h.hello); err != nil {
		h.Close()
		return nil, err
	}
	if err := h.nc.Flush(); err != nil {
		h.Close()
		return nil, spec.Errorf("Hub.NATS", "%s: %w", h.url, err)
	}
	return h, nil
}

// startServer starts the embedded NATS server, token required.
func (h *Hub) startServer() error {
	listen := h.cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return spec.Errorf("Hub.Listen", "%q: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return spec.Errorf("Hub.Listen", "%q: bad port", listen)
	}
	if err := ClearListen(listen, h.cfg.TLSCert != "", h.cfg.InsecureListen); err != nil {
		return err
	}
	if !loopbackHost(host) && h.cfg.TLSCert == "" {
		h.logf("hub: warning: the embedded NATS server listens on %s without TLS: agents' messages cross the network in clear", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:    "stampede",
		Host:          host,
		Port:          port,
		Authorization: h.keys.nats,
		NoLog:         true,
		NoSigs:        true,
		MaxPayload:    8 << 20,
		MaxPending:    256 << 20,
		WriteDeadline: 10 * time.Second,
	}
	if (h.cfg.TLSCert == "") != (h.cfg.TLSKey == "") {
		return spec.Errorf("Hub.TLSCert", "{Hub.TLSCert} and {Hub.TLSKey}: give both")
	}
	if h.cfg.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: h.cfg.TLSCert, KeyFile: h.cfg.TLSKey, CaFile: h.cfg.CA, Verify: h.cfg.CA != ""})
		if err != nil {
			return spec.Errorf("Hub.TLSCert", "%w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSVerify = tc, true, h.cfg.CA != ""
		opts.TLSTimeout = 5
	}
	if h.srv, err = server.NewServer(opts); err != nil {
		return spec.Errorf("Hub.Listen", "%s: %w", listen, err)
	}
	go h.srv.Start()
	if !h.srv.ReadyForConnections(10 * time.Second) {
		h.srv.Shutdown()
		return spec.Errorf("Hub.Listen", "%s: the embedded NATS server did not start (is the address in use?)", listen)
	}
	addr, ok := h.srv.Addr().(*net.TCPAddr)
	if !ok {
		return errors.New("hub: the embedded NATS server has no TCP address")
	}
	scheme := "nats"
	if h.cfg.TLSCert != "" {
		scheme = "tls"
	}
	ip := addr.IP.String()
	if addr.IP.IsUnspecified() {
		ip = advertised()
	}
	h.url = fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(ip, strconv.Itoa(addr.Port)))
	return nil
}

// ClearListen refuses a listen address (HOST:PORT) beyond loopback
// without TLS unless insecure allows it, naming the fields to change.
func ClearListen(listen string, tls, insecure bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || loopbackHost(host) || tls || insecure {
		return nil
	}
	return fmt.Errorf("hub: Listen %s is beyond loopback without TLS: agents' messages would cross the network in clear; set TLSCert and TLSKey, or InsecureListen to accept that", listen)
}

// loopbackHost says whether host (no port) is localhost or a loopback
// address; "" (every address) is not.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// advertised is this host's name, for a server listening on every address.
func advertised() string {
	if n, err := os.Hostname(); err == nil && n != "" {
		return n
	}
	return "127.0.0.1"
}

// URL is the NATS URL agents join at.
func (h *Hub) URL() string { return h.url }

// WroteToken says whether the hub wrote a new token to its file (else it
// read one that was there).
func (h *Hub) WroteToken() bool { return h.wrote }

// JoinCommand is what joins this run from another host (the token file
// copied there): Config.JoinCommand's line, or the join's parts in plain
// words without it.
func (h *Hub) JoinCommand() string {
	j := JoinHint{NATS: h.url, TokenFile: h.cfg.TokenFile, Creds: h.cfg.Creds, CA: h.cfg.CA}
	if h.cfg.JoinCommand != nil {
		return h.cfg.JoinCommand(j)
	}
	s := fmt.Sprintf("an agent joining %s with the token in %s", j.NATS, j.TokenFile)
	if j.Creds != "" {
		s += ", the NATS credentials in " + j.Creds
	}
	if j.CA != "" {
		s += ", the server verified by the CA in " + j.CA
	}
	return s
}

func (h *Hub) logf(format string, args ...any) {
	if h.cfg.Log != nil {
		h.cfg.Log(format, args...)
	}
}

// refuse answers a hello with why it was refused; key nil leaves the
// answer unsigned (the agent's token is not the run's).
func (h *Hub) refuse(reply string, key []byte, why string) {
	_ = h.nc.PublishMsg(newMsg(key, reply, 0, kRefused, 0, []byte(why)))
}

// hello handles an agent's first message.
func (h *Hub) hello(m *nats.Msg) {
	var he hello
	if err := json.Unmarshal(m.Data, &he); err != nil || !validSID(he.SID) || m.Reply != downSubject(he.SID) {
		return // not a stampede agent's hello
	}
	who := fmt.Sprintf("agent %q on %s", Printable(he.Name), Printable(he.Host))
	if _, err := verify(h.keys.sign, m); err != nil {
		h.logf("hub: refused %s: its token is not this run's", who)
		h.refuse(m.Reply, nil, "the coordinator refused the token: it is not this run's (check the token file)")
		return
	}
	if he.V != Version {
		h.refuse(m.Reply, h.keys.sign, fmt.Sprintf("the agent speaks hub version %d, the coordinator %d: run the same stampede on every host", he.V, Version))
		return
	}
	h.mu.Lock()
	if _, ok := h.pending[he.SID]; ok {
		h.mu.Unlock()
		return // a hello sent again while the first is answered
	}
	// A name being admitted counts as taken too: its agent may already
	// have been told it joined.
	taken := false
	for _, name := range h.pending {
		taken = taken || name == he.Name
	}
	for _, o := range h.members {
		taken = taken || o.Name == he.Name
	}
	if taken {
		h.mu.Unlock()
		h.logf("hub: refused %s: an agent of that name has joined", who)
		h.refuse(m.Reply, h.keys.sign, fmt.Sprintf("an agent named %q has already joined this run: give each agent its own name", he.Name))
		return
	}
	if h.want > 0 && len(h.members) >= h.want {
		h.mu.Unlock()
		h.refuse(m.Reply, h.keys.sign, fmt.Sprintf("the run has its %d agents already", h.want))
		return
	}
	h.pending[he.SID] = he.Name
	h.mu.Unlock()
	up, err := h.nc.SubscribeSync(upSubject(he.SID))
	if err != nil {
		return
	}
	_ = up.SetPendingLimits(-1, -1)
	nonce := randomHex(16)
	b, _ := json.Marshal(challenge{Nonce: nonce, RunID: h.cfg.RunID})
	_ = h.nc.PublishMsg(newMsg(h.keys.sign, m.Reply, 0, kChallenge, 0, b))
	go h.admit(he, nonce, up)
}

// admit completes a join: the agent's auth, the welcome, its clock
// estimate.
func (h *Hub) admit(he hello, nonce string, up *nats.Subscription) {
	defer func() {
		h.mu.Lock()
		delete(h.pending, he.SID)
		h.mu.Unlock()
	}()
	key := sessionKey(h.keys.sign, he.SID, he.Nonce, nonce)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := up.NextMsg(time.Until(deadline))
		if err != nil {
			_ = up.Unsubscribe()
			return
		}
		p, err := verify(key, m)
		if err != nil || p.kind != kAuth || p.seq != 0 || string(p.body) != nonce {
			continue
		}
		break
	}
	s := newSession(h.nc, key, downSubject(he.SID), up, 0, 0)
	mem := &Member{Name: he.Name, Role: he.Role, Capacity: he.Capacity, Host: he.Host, PID: he.PID, Addr: he.Addr, SourceIPs: he.SourceIPs, EphemeralPorts: he.EphemeralPorts, s: s, joined: make(chan struct{})}
	s.onMsg = func(p parsed) {
		switch p.kind {
		case kClock:
			var c clockMsg
			if json.Unmarshal(p.body, &c) == nil {
				c.TC = time.Now()
				_ = s.sendJSON(kClock, c)
			}
		case kOffset:
			var o offsetMsg
			if json.Unmarshal(p.body, &o) != nil {
				return
			}
			select {
			case <-mem.joined:
				return
			default:
			}
			mem.Offset, mem.OffsetError = o.Offset, o.Bound
			close(mem.joined)
		}
	}
	go s.run()
	if err := s.sendJSON(kWelcome, struct{}{}); err != nil {
		s.end(err)
		return
	}
	select {
	case <-mem.joined:
	case <-s.dead:
		return
	case <-time.After(30 * time.Second):
		s.end(errors.New("no clock estimate in 30s"))
		return
	}
	h.mu.Lock()
	full := h.want > 0 && len(h.members) >= h.want
	if !full {
		h.members = append(h.members, mem)
	}
	h.mu.Unlock()
	if full {
		s.bye()
		return
	}
	h.logf("hub: agent %q joined from %s (%s, role %s%s), clock offset %+.3f ms ± %.3f ms",
		mem.Name, mem.Host, mem.Addr, mem.Role, capText(mem.Capacity), ms(mem.Offset), ms(mem.OffsetError))
	h.signal()
	go func() {
		<-s.dead
		h.signal()
	}()
}

func capText(c int) string {
	if c == 0 {
		return ""
	}
	return fmt.Sprintf(", capacity %d", c)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (h *Hub) signal() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Wait waits until n agents have joined (an agent gone before that is
// dropped from the count), at most timeout, and returns them in the order
// they joined. Agents beyond n are refused.
func (h *Hub) Wait(ctx context.Context, n int, timeout time.Duration) ([]*Member, error) {
	h.mu.Lock()
	h.want = n
	h.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		h.mu.Lock()
		live := h.members[:0:0]
		for _, m := range h.members {
			select {
			case <-m.s.dead:
				h.logf("hub: agent %q left before the run began: %v", m.Name, m.s.err())
			default:
				live = append(live, m)
			}
		}
		h.members = live
		got := append([]*Member(nil), live...)
		h.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-h.changed:
		case <-timer.C:
			return got, spec.Errorf("Storm.Agents", "%d: %s after %s; start the missing ones with: %s", n, joinedText(got, n), timeout, h.JoinCommand())
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// joinedText says who joined and how many are missing.
func joinedText(got []*Member, n int) string {
	if len(got) == 0 {
		return fmt.Sprintf("no agent joined, %d missing", n)
	}
	names := make([]string, len(got))
	for i, m := range got {
		names[i] = fmt.Sprintf("%s (%s on %s)", m.Name, m.Role, m.Host)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d of %d agents joined (%s), %d missing", len(got), n, strings.Join(names, ", "), n-len(got))
}

// Close ends every member's session in order (bye), then the NATS
// connection and the embedded server.
func (h *Hub) Close() {
	if h.closed.Swap(true) {
		return
	}
	h.mu.Lock()
	members := append([]*Member(nil), h.members...)
	h.mu.Unlock()
	for _, m := range members {
		m.s.bye()
	}
	if h.nc != nil {
		_ = h.nc.FlushTimeout(2 * time.Second)
		h.nc.Close()
	}
	if h.srv != nil {
		h.srv.Shutdown()
		h.srv.WaitForShutdown()
	}
}
