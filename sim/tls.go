package sim

import (
	"time"

	"github.com/stampede-dev/stampede/calibration"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
)

// TLSCosts are the CPU one TLS handshake costs each end, full (the key
// exchange and the certificate's signature, verified by the client) or
// resumed (a TLS 1.3 pre-shared key or a TLS 1.2 ticket: no signature).
// A wss:// server (spec.Server.TLS) charges them on top of an upgrade's
// other costs: the target's to its process (its capacity, and with
// Config.Cores the machine's cores), the client's to the loadgen's share
// of the cores. A zero field is DefaultTLSCosts' for the server's
// certificate kind.
type TLSCosts struct {
	// Full is the target's CPU per full handshake.
	Full time.Duration `json:"full"`
	// Resumed is the target's CPU per resumed handshake.
	Resumed time.Duration `json:"resumed"`
	// ClientFull is the loadgen's CPU per full handshake (Config.Cores).
	ClientFull time.Duration `json:"client_full"`
	// ClientResumed is the loadgen's CPU per resumed handshake
	// (Config.Cores).
	ClientResumed time.Duration `json:"client_resumed"`
}

// DefaultTLSCosts are Go crypto/tls's handshake costs for a certificate of
// kind (tlsconf.Kinds; "" or an unknown kind: ecdsa-p256, the target's
// default and the kind assumed of a user's own certificate), measured on
// this project's two-core machine by lab/tlscost: the embedded calibration
// file's sim.tls.KIND.* figures, each with its command and date.
func DefaultTLSCosts(kind string) TLSCosts {
	if !tlsconf.Kind(kind).Valid() {
		kind = spec.Server{TLS: true}.WithDefaults().TLSCertKind // the target's default kind
	}
	fig := func(f string) time.Duration { return calibration.MustDuration("sim.tls." + kind + "." + f) }
	return TLSCosts{Full: fig("full"), Resumed: fig("resumed"), ClientFull: fig("client_full"), ClientResumed: fig("client_resumed")}
}

// withDefaults returns c with every zero field DefaultTLSCosts(kind)'s.
func (c TLSCosts) withDefaults(kind string) TLSCosts {
	d := DefaultTLSCosts(kind)
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.Full, &d.Full}, {&c.Resumed, &d.Resumed}, {&c.ClientFull, &d.ClientFull}, {&c.ClientResumed, &d.ClientResumed},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return c
}

// validate reports a negative cost.
func (c TLSCosts) validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Full", c.Full}, {"Resumed", c.Resumed}, {"ClientFull", c.ClientFull}, {"ClientResumed", c.ClientResumed}} {
		if f.v < 0 {
			return spec.Errorf("Sim.TLS."+f.name, "must not be negative, got %s", f.v)
		}
	}
	return nil
}

// ReconnectTLSCost is the target's CPU for one reconnect's TLS handshake
// after a restart of the whole group: resumed when the server issues
// tickets, the fleet keeps its sessions and the keys survive the restart
// (Server.TLSTicketKeys), full otherwise; 0 for a ws:// server.
func (c Config) ReconnectTLSCost() time.Duration {
	d := c.withDefaults()
	if !d.Server.TLS {
		return 0
	}
	if !d.TLSNoTickets && !d.TLSNoResume && d.TLSTicketKeys != "" {
		return d.TLSCost.Resumed
	}
	return d.TLSCost.Full
}

// tlsModel is the handshakes of a wss:// server: which clients resume.
//
// A client that connected keeps the session the server gave it (when the
// server issues tickets and the client keeps a cache), tagged with the
// ticket-key generation that encrypted it; its next handshake resumes when
// that generation is still the server's, and is full otherwise. A failed
// attempt keeps the session (the loadgen's cache does, tlsconf.Session).
// A restart of the whole group at once with keys in memory
// (spec.Server.TLSTicketKeys empty) starts a new generation, as the
// target's group does (a rolling or one-process restart keeps the
// generation: the other processes still hold its keys); with a key file,
// the keys survive every restart.
type tlsModel struct {
	costs  TLSCosts
	resume bool  // the server issues tickets and the clients keep them
	kept   bool  // the ticket keys survive a restart (a key file)
	tag    uint8 // the current key generation, 1..255; a client's sess 0 is none
}

// newTLS returns the TLS model of cfg's server; nil for ws://.
func newTLS(cfg Config) *tlsModel {
	if !cfg.Server.TLS {
		return nil
	}
	return &tlsModel{costs: cfg.TLSCost, resume: !cfg.TLSNoTickets && !cfg.TLSNoResume, kept: cfg.TLSTicketKeys != "", tag: 1}
}

// resumes reports whether c's next handshake resumes its session.
func (t *tlsModel) resumes(c *client) bool {
	return t.resume && c.sess == t.tag
}

// serverCost is the target's CPU for c's handshake; 0 without TLS.
func (s *sim) serverCost(c *client) time.Duration {
	switch t := s.tls; {
	case t == nil:
		return 0
	case t.resumes(c):
		return t.costs.Resumed
	default:
		return t.costs.Full
	}
}

// clientCost is the loadgen's CPU for c's handshake; 0 without TLS.
func (s *sim) clientCost(c *client) time.Duration {
	switch t := s.tls; {
	case t == nil:
		return 0
	case t.resumes(c):
		return t.costs.ClientResumed
	default:
		return t.costs.ClientFull
	}
}

// handshook notes c's handshake, done when the target upgraded it: its
// kind (flResumed) for the 101's count, and the session it holds after.
func (s *sim) handshook(c *client) {
	t := s.tls
	if t == nil {
		return
	}
	c.flags &^= flResumed
	if t.resumes(c) {
		c.flags |= flResumed
	}
	if t.resume {
		c.sess = t.tag
	}
}

// loseKeys is a restart of the whole group with its ticket keys in
// memory: a new generation, under which no session issued before
// resumes. The tag wraps after 255 generations; the clients' sessions
// are then cleared, so an old tag never matches again.
func (s *sim) loseKeys() {
	t := s.tls
	if t == nil || t.kept {
		return
	}
	if t.tag == 255 {
		for i := range s.clients {
			s.clients[i].sess = 0
		}
		t.tag = 0
	}
	t.tag++
}
