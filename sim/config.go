package sim

import (
	"math"
	"time"

	"github.com/stampede-dev/stampede/calibration"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/spec"
)

// Defaults of the model that are the kernel's or chosen; those measured on
// real runs are read from the calibration file (below).
const (
	// DefaultLBQueue is a load balancer's listen backlog (LB.Queue): the
	// historical SOMAXCONN, as a listener's default.
	DefaultLBQueue = 128
	// DefaultRTT is the handshake round trip: the time from a SYN taken
	// into the SYN queue to its final ACK reaching the listener. SYNs
	// that arrive within it all see the same accept queue, which is how a
	// burst admits more handshakes than there is room for and their final
	// ACKs are dropped.
	DefaultRTT = 50 * time.Microsecond
	// DefaultDataRTO is tcp_rto_min: a client whose final ACK was
	// dropped sends its upgrade request again after it (the tail loss
	// probe, net.ipv4.tcp_early_retrans 3), then on retransmit timeouts
	// of DataRTO, doubling: at 0.2, 0.4, 0.8, 1.6, 3.2 s.
	DefaultDataRTO = 200 * time.Millisecond
	// DefaultSynRetries is the kernel's net.ipv4.tcp_syn_retries.
	DefaultSynRetries = 6
	// PerProcess is how many clients one target process holds by default:
	// the layout of the first calibration runs and of the 10 M figures
	// (docs/simulator.md). Real runs give a process 90 % of its open-file
	// limit (storm.PerProcess, 18,000 here), and lab/calibrate passes
	// each real run's layout; --procs sets either.
	PerProcess = 15000
	// ShedCost is the CPU a shedding target process spends on an upgrade
	// it answers 503 (Server.Shed): reading the request and writing a
	// short answer, a fifth of an upgrade at DefaultProcCapacity (100 µs)
	// and no handshake cost. Not measured: the figure of a handler that
	// parses the request and closes.
	ShedCost = 20 * time.Microsecond
	// MaxClients bounds a simulated fleet (client IDs are uint32 and the
	// timeline counts are uint32).
	MaxClients = 1 << 30
)

// The model's defaults measured on real runs: the embedded calibration
// file's figures, each with the command, day and machine it came from
// (package calibration).
var (
	// DefaultProcCapacity is how many connections one target process
	// accepts and upgrades per second when no accept rate paces it: the
	// loopback figure of the bundled target.
	DefaultProcCapacity = calibration.MustFloat("sim.proc_capacity")
	// DefaultStopTime is how long a restarting target process takes to
	// exit (closing its connections; its listener open until the end), on
	// top of its down time, as in the bench's restart of 10,000 clients.
	DefaultStopTime = calibration.MustDuration("sim.stop_time")
	// DefaultCloseRate is how many connections per second a stopping
	// target process closes, as in the same restart.
	DefaultCloseRate = calibration.MustFloat("sim.close_rate")
	// DefaultStartTime is how long a restarted target process takes from
	// listening to accepting (End to Ready), as in the same restart.
	DefaultStartTime = calibration.MustDuration("sim.start_time")
)

// DefaultSynSchedule is when a client's SYN is sent again, from the first
// SYN, on this kernel (tcp_syn_linear_timeouts=4): 1, 2, 3, 4, 5 s, then
// doubling gaps.
var DefaultSynSchedule = []time.Duration{
	1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second,
	7 * time.Second, 11 * time.Second, 19 * time.Second, 35 * time.Second, 67 * time.Second, 131 * time.Second,
}

// synGiveUp is when connect fails with ETIMEDOUT for TCP_SYNCNT 1..6, as
// measured on this kernel: the embedded calibration file's
// sim.syn_give_up, 3.0, 7.1, 19.5, 35.7, 69.7, 135 s.
var synGiveUp = calibration.MustDurations("sim.syn_give_up")

// SynGiveUp returns when a connect with TCP_SYNCNT n (1..) fails with
// ETIMEDOUT, from its first SYN: the measured figure, doubling past 6.
func SynGiveUp(n int) time.Duration {
	if n < 1 {
		n = DefaultSynRetries
	}
	if n <= len(synGiveUp) {
		return synGiveUp[n-1]
	}
	d := synGiveUp[len(synGiveUp)-1]
	for i := len(synGiveUp); i < n && d < 24*time.Hour; i++ {
		d *= 2
	}
	return d
}

// LB is a load balancer in front of the target: its own listen queue and
// connection rate. A connection it takes is forwarded to one target
// process; a target that refuses it or leaves it unanswered makes the
// balancer answer the upgrade with 502 or 504 (handshake_5xx).
type LB struct {
	// Rate is the connections per second the balancer takes from its
	// queue; zero is unlimited.
	Rate float64 `json:"rate"`
	// Queue is the balancer's listen backlog: connections waiting for it
	// beyond Queue+1 have their SYNs dropped. Zero means DefaultLBQueue.
	Queue int `json:"queue"`
}

// Retry is one retry decision of a simulated client, as loadgen.Retry
// reports a real client's: which client, its attempt number, the
// server's hint (a Retry-After or a close frame's delay; 0 none) and the
// wait it drew.
type Retry struct {
	Client  uint32        `json:"client"`
	Attempt int           `json:"attempt"`
	Class   string        `json:"class"`
	Hint    time.Duration `json:"hint,omitempty"`
	Delay   time.Duration `json:"delay"`
	At      time.Duration `json:"at"`
}

// Config is one simulated run: the fleet's spec and the server's, as a
// real run takes them (package spec; summary.json records them as a real
// run does, under "fleet" and "target"), and the model's own knobs. The
// zero value of every field but Clients, Duration and Policy means the
// default. Of the specs the model uses the fleet's size, ramp, policy,
// seed, timeouts, TCP_SYNCNT and Retry-After switch, and the server's
// process count (Procs: 0 is one per PerProcess clients, as run),
// backlog, accept rate and burst, handshake cost and the mitigations
// (AdmitRamp, AdmitFloor, Shed); the other fields are a real run's only.
type Config struct {
	spec.Client `json:"fleet"`
	spec.Server `json:"target"`
	// Duration is the run's length in virtual time.
	Duration time.Duration `json:"duration"`
	// Schedule is the chaos schedule; nil is none. ScheduleText is its
	// text, recorded in the results.
	Schedule     *chaos.Schedule `json:"-"`
	ScheduleText string          `json:"chaos,omitempty"`

	// ProcCapacity is the upgrades per second one process completes when
	// nothing else limits it; 0 is DefaultProcCapacity.
	ProcCapacity float64 `json:"proc_capacity"`
	// HZ is the kernel's tick rate: its TCP retransmit timers fire on a
	// timer wheel of that many jiffies a second (sim.timer); 0 is
	// DefaultHZ, negative exact timers.
	HZ int `json:"hz"`
	// NetdevBacklog is net.core.netdev_max_backlog: of the retransmits
	// one timer tick fires, those beyond NetdevBacklog+1 are dropped
	// before TCP sees them (sim.softnetDrop); 0 is DefaultNetdevBacklog,
	// negative no limit.
	NetdevBacklog int `json:"netdev_backlog"`
	// SynSchedule is when a SYN is sent again, from the first one; nil is
	// DefaultSynSchedule. A connect gives up at SynGiveUp(SynRetries).
	SynSchedule []time.Duration `json:"syn_schedule"`
	// NoSynCookies turns SYN cookies off: a SYN that finds the SYN queue
	// full is dropped instead of answered with a cookie.
	NoSynCookies bool `json:"no_syn_cookies"`
	// RTT is the handshake round trip; 0 is DefaultRTT.
	RTT time.Duration `json:"rtt"`
	// DataRTO is tcp_rto_min: a stalled upgrade request is sent again
	// DataRTO, DataRTO, 2·DataRTO, 4·DataRTO... apart (a loss probe,
	// then retransmit timeouts); 0 is DefaultDataRTO.
	DataRTO time.Duration `json:"data_rto"`
	// StopTime is a restarted process's exit, from being told to stop
	// until its listener closes: its connections are closed meanwhile and
	// it accepts nothing, but SYNs still reach its queue. The down time
	// with the port closed follows. With Cores it is the least: a
	// restart's processes exit after their last close at their share of
	// the cores, all of them, as the supervisor waits for every one (see
	// pacedRestart). 0 is DefaultStopTime, negative none.
	StopTime time.Duration `json:"stop_time"`
	// StartTime is a restarted process's start, listening to accepting;
	// 0 is DefaultStartTime, negative none.
	StartTime time.Duration `json:"start_time"`
	// CloseRate is how many connections per second a stopping target
	// process closes: its clients see the end of their connection spread
	// over conns/CloseRate from the restart's Start, in an order drawn per
	// connection. 0 is DefaultCloseRate; negative closes all at once.
	CloseRate float64 `json:"close_rate"`
	// IssueRate is how many attempts per second the fleet's machine can
	// start: a real loadgen spends CPU on every socket, connect and epoll
	// registration, so a fleet that retries at one instant reaches the
	// server spread over a few hundred ms. Set, it also makes the fleet
	// one machine's: its clients share that kernel's timer wheel (their
	// retransmits fire together) and softnet backlog. 0 is unlimited: a
	// fleet of independent devices, a kernel each; lab/calibrate
	// passes each real run's own (its fastest 100 ms of attempts).
	IssueRate float64 `json:"issue_rate"`
	// ReactorCost, when positive, is what an attempt costs its loadgen
	// reactor: each loadgen process (one per 18,000 clients) deals its
	// clients to Client.Reactors reactors, and a reactor writes a
	// completed connect's upgrade request only when it has done the
	// attempts queued before it (sim.reactors), so a burst of connects
	// reaches the target's deferred accept spread over the reactors'
	// time. The loadgen's CPU per attempt (summary.json
	// resources.loadgen.cpu_us_per_attempt) measures it. 0 is no queue:
	// the request reaches the listener one RTT after the SYN.
	ReactorCost time.Duration `json:"reactor_cost"`
	// LB, when set, puts a load balancer in front of the target.
	LB *LB `json:"lb,omitempty"`
	// Cores, when positive, is the cores of the one machine both ends
	// run on, as a real run on one machine does: every operation of
	// either end takes its CPU (CPU) from them, and work that finds them
	// busy waits (sim.cpuModel). It also makes the fleet one machine's,
	// sharing its timer wheel and softnet backlog, as IssueRate does. 0
	// is not modelled: the ends' CPU is unlimited but for ProcCapacity
	// and IssueRate.
	Cores float64 `json:"cores,omitempty"`
	// CPU is what each operation costs when Cores is set; a zero field
	// is DefaultCPUCosts'. A run's Result.Config holds the costs it used
	// (every field, with Cores; none without), which summary.json
	// records under "cpu" when Settings does not replace the config.
	CPU CPUCosts `json:"cpu,omitzero"`
	// TLSCost is what a handshake costs each end when the server speaks
	// TLS (Server.TLS, or a setting that implies it): a zero field is
	// DefaultTLSCosts' for Server.TLSCertKind. Whether a client's
	// handshake is full or resumed follows the server's tickets and
	// their keys (Server.TLSNoTickets, TLSTicketKeys) and the fleet's
	// session cache (Client.TLSNoResume): see tlsModel. Recorded with
	// every field under "tls_cost" for a wss:// server; none for ws://.
	TLSCost TLSCosts `json:"tls_cost,omitzero"`

	// Start is the wall-clock instant the results call the run's start;
	// the zero value is the Unix epoch, so the same config gives the same
	// files.
	Start time.Time `json:"-"`
	// OnRetry, when set, is called with every retry decision.
	OnRetry func(Retry) `json:"-"`
	// Settings, when not nil, is what summary.json records as the run's
	// config instead of this struct: the command line renders its flags
	// in the user's spelling. It must marshal to JSON.
	Settings any `json:"-"`
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	reactors := c.Client.Reactors
	c.Client = c.Client.WithDefaults()
	if reactors == 0 { // the loadgen's default on the modelled machine, not on this one
		reactors = DefaultLoadgenReactors
		if c.Cores > 0 {
			reactors = min(max(1, int(c.Cores)), 4)
		}
		c.Client.Reactors = max(1, min(reactors, c.Clients))
	}
	c.Server = c.Server.WithDefaults()
	if c.SynRetries == 0 {
		c.SynRetries = DefaultSynRetries
	}
	if c.Procs == 0 {
		c.Procs = max(1, (c.Clients+PerProcess-1)/PerProcess)
	}
	if c.ProcCapacity == 0 {
		c.ProcCapacity = DefaultProcCapacity
	}
	if c.SynSchedule == nil {
		c.SynSchedule = DefaultSynSchedule
	}
	if c.HZ == 0 {
		c.HZ = DefaultHZ
	}
	if c.NetdevBacklog == 0 {
		c.NetdevBacklog = DefaultNetdevBacklog
	}
	if c.RTT == 0 {
		c.RTT = DefaultRTT
	}
	if c.DataRTO == 0 {
		c.DataRTO = DefaultDataRTO
	}
	if c.CloseRate == 0 {
		c.CloseRate = DefaultCloseRate
	}
	if c.StopTime == 0 {
		c.StopTime = DefaultStopTime
	}
	c.StopTime = max(c.StopTime, 0)
	if c.StartTime == 0 {
		c.StartTime = DefaultStartTime
	}
	c.StartTime = max(c.StartTime, 0)
	if c.Cores > 0 {
		c.CPU = c.CPU.WithDefaults()
	} else {
		c.CPU = CPUCosts{} // not used: not recorded
	}
	if c.Server.TLS {
		c.TLSCost = c.TLSCost.withDefaults(c.TLSCertKind)
	} else {
		c.TLSCost = TLSCosts{} // not used: not recorded
	}
	if c.LB != nil && c.LB.Queue == 0 {
		lb := *c.LB
		lb.Queue = DefaultLBQueue
		c.LB = &lb
	}
	if c.Start.IsZero() {
		c.Start = time.Unix(0, 0).UTC()
	}
	return c
}

// Validate reports the first field that makes the config unusable as a
// *spec.FieldError: the specs' own checks, then the model's ("Sim.RTT").
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error { return spec.Errorf("Sim."+field, format, a...) }
	if c.Clients > MaxClients {
		return spec.Errorf("Client.Clients", "must be within 1..%d, got %d", MaxClients, c.Clients)
	}
	if err := c.Client.ValidateFleet(false); err != nil {
		return err
	}
	if err := c.Server.Validate(); err != nil {
		return err
	}
	switch {
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return bad("Duration", "must be within (0, 24h], got %s", c.Duration)
	case c.IssueRate < 0:
		return bad("IssueRate", "must not be negative, got %g", c.IssueRate)
	case c.Cores < 0 || math.IsNaN(c.Cores) || math.IsInf(c.Cores, 0):
		return bad("Cores", "must be a number of cores (0: not modelled), got %g", c.Cores)
	case c.ProcCapacity < 0:
		return bad("ProcCapacity", "must not be negative, got %g", c.ProcCapacity)
	case c.RTT < 0:
		return bad("RTT", "must not be negative, got %s", c.RTT)
	case c.ReactorCost < 0:
		return bad("ReactorCost", "must not be negative (0: no queue), got %s", c.ReactorCost)
	case c.DataRTO < 0:
		return bad("DataRTO", "must not be negative, got %s", c.DataRTO)
	case c.LB != nil && c.LB.Rate < 0:
		return bad("LB.Rate", "must not be negative, got %g", c.LB.Rate)
	case c.LB != nil && c.LB.Queue < 0:
		return bad("LB.Queue", "must not be negative, got %d", c.LB.Queue)
	}
	if err := c.CPU.validate(); err != nil {
		return err
	}
	if err := c.TLSCost.validate(); err != nil {
		return err
	}
	for i, d := range c.SynSchedule {
		if d <= 0 || i > 0 && d <= c.SynSchedule[i-1] {
			return bad("SynSchedule", "must be positive and increasing, got %v", c.SynSchedule)
		}
	}
	if c.Schedule != nil {
		// The checks and caps a real run applies: a schedule that fires
		// too often, overlaps itself or outlasts the run is refused before
		// anything is simulated.
		if err := c.Schedule.Check(c.Duration); err != nil {
			return bad("Schedule", "%w", err)
		}
		for _, e := range c.Schedule.Entries {
			if e.Event.Kind == chaos.ProxyEvent {
				return bad("Schedule", "%q: the fault proxy is not modelled", e.Text)
			}
		}
	}
	return nil
}

// Defaults returns the config whose every field is its default: what a
// zero field means.
func Defaults() Config { return Config{}.withDefaults() }
