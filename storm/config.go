package storm

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/stampede-dev/stampede/report/live"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/haproxy"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/metrics"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/target"
)

// Config describes one run. The zero value of a field means its default.
type Config struct {
	// Target configures every target process. Its Addr empty means a free
	// loopback port outside the ephemeral range; AcceptRate is the whole
	// group's rate, shared by its processes; Procs is the size of the
	// group, zero sizing it for the fleet (PerProcess connections each).
	// Unused with Fleet.URL.
	Target target.Config `json:"target"`
	// Fleet is the loadgen fleet. An empty URL aims it at the run's own
	// target (the bundled server, restarted by the schedule); a URL aims
	// it at any server, and outages are then detected from the clients'
	// side (Detect). A zero Fleet.Ramp with a target AcceptRate ramps at
	// 90 % of that rate, so the first connects measure the fleet, not an
	// overflow of the target.
	Fleet loadgen.Config `json:"fleet"`
	// LoadgenProcs is the number of loadgen agent processes; zero sizes it
	// for the fleet. With Fleet.URL, 1 runs the fleet in this process.
	LoadgenProcs int `json:"loadgen_procs"`
	// Detect tunes outage detection from the clients' side (Fleet.URL).
	Detect summary.DetectConfig `json:"detect"`
	// Schedule is the chaos schedule; nil means none. Not with Fleet.URL.
	Schedule *chaos.Schedule `json:"-"`
	// ScheduleText is the schedule as given, recorded in the results.
	ScheduleText string `json:"chaos"`
	// Proxy relays the fleet through the fault proxy group in front of the
	// target (--proxy). A schedule with proxy events turns it on by
	// itself.
	Proxy bool `json:"proxy"`
	// Duration is the run's length from the start barrier. Required.
	Duration time.Duration `json:"duration"`
	// Out is the results folder; it is created. Empty writes nothing.
	Out string `json:"-"`
	// Exe is the stampede binary that agent processes run; empty means
	// this process's own executable.
	Exe string `json:"-"`
	// Log receives progress lines and the agents' stderr; nil means none.
	Log io.Writer `json:"-"`
	// ProgressInterval is the time between plain progress lines, when Log
	// is not a terminal (a terminal gets a status line redrawn every
	// second); zero means DefaultProgressInterval.
	ProgressInterval time.Duration `json:"-"`
	// MetricsAddr, if set, is the host:port on which Prometheus metrics
	// are served at /metrics while the run goes (--metrics-addr).
	MetricsAddr string `json:"-"`
	// MetricsLinger keeps serving MetricsAddr this long after the run,
	// with the final figures, so a scrape sees them (--metrics-linger);
	// zero closes it when the run ends.
	MetricsLinger time.Duration `json:"-"`
	// Pushgateway, if set, is the URL of a Prometheus Pushgateway that the
	// final metrics are pushed to when the run ends, job "stampede" grouped
	// by run_id (--pushgateway).
	Pushgateway string `json:"-"`
	// OTLP, when its Endpoint is set, exports the same metrics over OTLP
	// to an OpenTelemetry collector: every OTLP.Interval and once more
	// with the final figures when the run ends. Its headers are secret.
	OTLP metrics.OTLPConfig `json:"-"`
	// Live, if set, serves the run's live page (report/live): the
	// report's page fed by a stream while the run goes, its URL with the
	// token told to Live.Announce once. Never written to the results.
	Live *live.Config `json:"-"`
	// liveSrv is the live page a bench's runs share (set by Bench).
	liveSrv *live.Server
	// SLO are the gates the run is judged by (--slo): evaluated on the
	// summary, recorded in summary.json "slo" and "pass"; none passes.
	SLO []slo.SLO `json:"slo,omitempty"`
	// HAProxySockets are the runtime API sockets of the HAProxy instances
	// in front of the server (--haproxy-socket): their counters are read
	// once a second into haproxy.csv and summary.json "haproxy"
	// (docs/loadbalancer.md). Each must answer before the run starts.
	HAProxySockets []string `json:"haproxy_sockets,omitempty"`
	// Agents is how many agents on other hosts the run waits for
	// (--agents): the roles are placed on them (docs/fleet.md) instead of
	// this machine's processes. Zero runs every role here.
	Agents int `json:"agents,omitempty"`
	// Hub is how the agents reach this coordinator: the embedded NATS
	// server's address or an existing server, the token file, TLS.
	Hub hub.Config `json:"-"`
	// AllowRemote is the coordinator's allow list (agent.Plan.Allow):
	// the hosts and address prefixes beyond loopback and the namespace
	// hosts that the agents' load may go to. Each agent refuses a plan
	// whose load goes elsewhere, or where its own list does not allow.
	AllowRemote []string `json:"-"`
	// AgentTimeout bounds the wait for the agents to join
	// (--agent-timeout); zero means DefaultAgentTimeout.
	AgentTimeout time.Duration `json:"-"`
	// OnAgentLoss says what a lost agent does to the run
	// (--on-agent-loss): LossFail stops the run at once (exit 2, folder
	// written), LossContinue lets it finish without the agent and reports
	// the rest. Empty: the run goes on and is incomplete (exit 2).
	OnAgentLoss string `json:"on_agent_loss,omitempty"`
	// Sidecars run beside the fleet from the start barrier to the run's
	// end (a drill's deploy command, a load balancer's counters): their
	// events join summary.json's and their files the results folder (see
	// Sidecar).
	Sidecars []Sidecar `json:"-"`
	// Settings, when not nil, is what summary.json records as the run's
	// config instead of this struct: the command line renders its flags
	// in the user's spelling. It must marshal to JSON, secrets redacted.
	Settings any `json:"-"`
	// SecretValues are more strings the run's files and lines hide
	// wherever they appear, beside those of its headers and URLs (a
	// drill's deploy command's, redact.CommandValues).
	SecretValues []string `json:"-"`
	// Kind is the kind of run summary.json's spec records (spec.Run.Kind);
	// empty: spec.KindLoadgen for a fleet aimed at Fleet.URL, else
	// spec.KindRun. A bench and a drill set theirs.
	Kind string `json:"-"`
	// Deploy is a drill's deploy, recorded in summary.json's spec; nil
	// for every other run.
	Deploy *spec.Deploy `json:"-"`
}

// summaryConfig is what summary.json records as the run's config:
// Settings with the sizing the run chose ("sizing": the processes and
// source addresses it decided) when set, else the redacted config with its
// sizing and the target configuration actually used.
func (c Config) summaryConfig(sz Sizing, tcfg target.Config) any {
	if c.Settings != nil {
		return settingsConfig{c.Settings, sz}
	}
	return runConfig{Config: c.redacted(), Sizing: sz, Target: redactedTarget(tcfg)}
}

// summarySpec is what summary.json records as the run's spec: the fleet
// and the server as the run used them (the fleet's URL the one it
// dialled, the server's Procs the group's size, its accept rates the
// whole group's), every default applied. results.Summarize redacts it.
func (c Config) summarySpec(fleet loadgen.Config, sz Sizing) *spec.Run {
	kind := c.Kind
	if kind == "" {
		kind = spec.KindRun
		if c.external() {
			kind = spec.KindLoadgen
		}
	}
	client := fleet.Client.WithDefaults()
	out := &spec.Run{Kind: kind, Client: &client, Duration: c.Duration, Chaos: c.ScheduleText, Deploy: c.Deploy}
	if !c.external() {
		srv := c.Target.Server.WithDefaults()
		srv.Procs = sz.TargetProcs
		out.Server = &srv
	}
	return out
}

// settingsConfig is Config.Settings, a JSON object, with "sizing" added.
type settingsConfig struct {
	settings any
	sizing   Sizing
}

// MarshalJSON writes the settings' object with a "sizing" key last; a
// settings value that is no object is written as it is.
func (s settingsConfig) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // <redacted>, not \u003credacted\u003e
	if err := enc.Encode(s.settings); err != nil {
		return nil, err
	}
	b := bytes.TrimSpace(buf.Bytes())
	if len(b) < 2 || b[0] != '{' {
		return b, nil
	}
	sz, err := json.Marshal(s.sizing)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"sizing":`...)
	out = append(append(out, sz...), '}')
	return out, nil
}

// redacted returns the config as summary.json records it: header values
// that carry credentials, the URL's user info and the store's password
// hidden (docs/drill.md "Secrets").
func (c Config) redacted() Config {
	c.Fleet = c.Fleet.Redacted()
	c.Target = redactedTarget(c.Target)
	return c
}

// redactedTarget hides the password of the target's store URL.
func redactedTarget(t target.Config) target.Config {
	t.Store = redact.URL(t.Store)
	return t
}

// What a lost agent does to a run (Config.OnAgentLoss).
const (
	LossFail     = "fail"
	LossContinue = "continue"
)

// DefaultAgentTimeout is how long a run waits for its agents to join.
const DefaultAgentTimeout = 2 * time.Minute

// external reports whether the fleet is aimed at a server the run does not
// own.
func (c *Config) external() bool { return c.Fleet.URL != "" }

// Validate reports the first unusable field as a *spec.FieldError. Run
// calls it once, before any process starts.
func (c *Config) Validate() error {
	switch c.OnAgentLoss {
	case "", LossFail, LossContinue:
	default:
		return spec.Errorf("Storm.OnAgentLoss", "%q: fail or continue", c.OnAgentLoss)
	}
	if err := agent.ValidAllow(c.AllowRemote); err != nil {
		return spec.Errorf("Storm.AllowRemote", "%v", err)
	}
	if c.Agents < 0 {
		return spec.Errorf("Storm.Agents", "must not be negative, got %d", c.Agents)
	}
	if c.Duration <= 0 {
		return spec.Errorf("Storm.Duration", "must be positive, got %s", c.Duration)
	}
	if err := c.OTLP.Validate(); err != nil {
		return err
	}
	if c.Live != nil {
		if err := c.Live.Validate(); err != nil {
			return err
		}
	}
	if c.Agents == 0 { // with agents, each host brings its own addresses
		if err := loadgen.CheckLocalSources(c.Fleet.SourceIPs); err != nil {
			return err
		}
	}
	if c.external() {
		if c.Schedule != nil || c.Proxy {
			return spec.Errorf("Storm.Schedule", "{Storm.Schedule} and {Storm.Proxy} need the run's own target; a fleet against {Client.URL} detects outages itself")
		}
		if err := c.Detect.Validate(); err != nil {
			return err
		}
		return c.Fleet.Validate()
	}
	if c.Schedule != nil {
		if err := c.Schedule.Check(c.Duration); err != nil {
			return spec.Errorf("Storm.Schedule", "%w", err)
		}
	}
	// The fleet is checked here, before any process starts, not first in
	// each agent.
	f, t := c.asRun()
	if wantsStore(c.Target.Server) && f.Mode != spec.ModeStampede {
		return errNotProtocol(f.Mode)
	}
	if err := t.Validate(); err != nil {
		return err
	}
	return f.Validate()
}

// asRun returns the fleet and the target as Run makes them, for Validate:
// a target with a store (or its switches) implies the stampede mode
// (messageProtocol), the stampede mode gets a store (Run chooses where:
// the results folder), and the fleet's URL is the target's, whose port is
// known only once it runs.
func (c *Config) asRun() (loadgen.Config, target.Config) {
	f, t := c.Fleet, c.Target
	f.Mode = impliedMode(f.Mode, t.Server)
	if f.Mode == spec.ModeStampede && t.Store == "" {
		t.Store = "jetstream:///"
	}
	f.URL = "ws://127.0.0.1:1/"
	if t.Server.WithDefaults().TLS { // --cert, --tls-cert-kind, --tls-ticket-keys imply --tls
		f.URL = "wss://127.0.0.1:1/"
	}
	return f, t
}

// wantsStore reports whether the target's spec asks for the message
// protocol's store.
func wantsStore(t spec.Server) bool { return t.Store != "" || t.NoDedupe || t.Retention != 0 }

// impliedMode is the fleet's message mode given the target's spec: a
// store with no message mode (or "none") implies the stampede mode.
func impliedMode(mode string, t spec.Server) string {
	if wantsStore(t) && (mode == "" || mode == spec.ModeNone) {
		return spec.ModeStampede
	}
	return mode
}

// errNotProtocol refuses a store for a fleet that does not speak the
// message protocol.
func errNotProtocol(mode string) error {
	return spec.Errorf("Server.Store", "{Server.Store}, {Server.NoDedupe} and {Server.Retention} are for the message protocol; use {Client.Mode} stampede (got {Client.Mode} %s)", mode)
}

// Result is what a run produced.
type Result struct {
	// Summary is the run's summary.json.
	Summary *summary.Summary
	// Report is the merged record of every loadgen agent.
	Report *results.Report
	// Sizing is how the run was spread over processes.
	Sizing Sizing
	// HAProxy holds the load balancer's samples (HAProxySockets); nil
	// without it.
	HAProxy *haproxy.Sampler
	// Members are each agent's own results (a run with --agents), by
	// agent name: their exact merge is Report.
	Members map[string]*results.Report
}

// ErrIncomplete is returned (wrapped) with a Result when a process of the
// run exited when nothing scheduled it or an agent was lost: the folder is
// written, summary.json says "complete": false.
var ErrIncomplete = errors.New("the run is incomplete")

// ErrInterrupted is returned (wrapped) with a Result when ctx ended before
// the run did (Ctrl-C): the fleet was stopped at once and the folder
// written with "interrupted": true.
var ErrInterrupted = errors.New("the run was interrupted")

// size chooses the run's processes and source addresses, and makes the
// message mode and the target's store agree.
func size(cfg *Config, tcfg *target.Config) (Sizing, error) {
	if cfg.external() {
		u, err := url.Parse(cfg.Fleet.URL)
		if err != nil {
			return Sizing{}, spec.Errorf("Client.URL", "%w", err)
		}
		dst, _ := netip.ParseAddr(u.Hostname()) // a name: not known to be loopback
		return Size(cfg.Fleet.Clients, cfg.LoadgenProcs, 1, cfg.Fleet.SourceIPs, dst)
	}
	addr := tcfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0" // a free port is chosen when the target starts
	}
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return Sizing{}, spec.Errorf("Server.Addr", "%q: %w", tcfg.Addr, err)
	}
	targetProcs, err := messageProtocol(cfg, tcfg)
	if err != nil {
		return Sizing{}, err
	}
	return Size(cfg.Fleet.Clients, cfg.LoadgenProcs, targetProcs, cfg.Fleet.SourceIPs, dst.Addr())
}

// messageProtocol makes the fleet's message mode and the target's store
// agree: the stampede mode needs a target that speaks the protocol, so it
// gets an embedded store in the results folder unless one is given: the
// file log when the group has one process, the embedded JetStream (run by
// the target group's owner, kept across the processes' restarts) when
// several share the rooms; a store with no message mode (or "none") implies the stampede
// mode. Rooms fan out across the group's processes through the store's
// feed, so the run places as many target processes as the fleet needs,
// on a store they can share (store.CheckShared).
func messageProtocol(cfg *Config, tcfg *target.Config) (targetProcs int, err error) {
	cfg.Fleet.Mode = impliedMode(cfg.Fleet.Mode, tcfg.Server)
	if cfg.Fleet.Mode != spec.ModeStampede {
		if wantsStore(tcfg.Server) {
			return 0, errNotProtocol(cfg.Fleet.Mode)
		}
		return cfg.Target.Procs, nil
	}
	if tcfg.Store == "" {
		dir := cfg.Out
		if dir == "" {
			if dir, err = os.MkdirTemp("", "stampede-store-"); err != nil {
				return 0, err
			}
		} else if err = folder.MakeDir(dir); err != nil {
			// The store writes into the results folder during the run:
			// private from now, not only once the run has ended.
			return 0, err
		}
		abs, err := filepath.Abs(filepath.Join(dir, "store"))
		if err != nil {
			return 0, err
		}
		// One process keeps the file log (the faster of the two: one
		// fsync'd append, no broker round trip); rooms shared by several
		// processes need the embedded JetStream, which they can share.
		tcfg.Store = "file://" + abs
		if cfg.Target.Procs > 1 || cfg.Fleet.Clients > PerProcess {
			tcfg.Store = "jetstream://" + abs
		}
	}
	if cfg.Target.Procs > 1 || cfg.Fleet.Clients > PerProcess {
		if err := store.CheckShared(tcfg.Store); err != nil {
			return 0, spec.Errorf("Server.Store", "%d clients need %d target processes: %w", cfg.Fleet.Clients, max(cfg.Target.Procs, ceilDiv(cfg.Fleet.Clients, PerProcess)), err)
		}
	}
	return cfg.Target.Procs, nil
}

// runConfig is what summary.json records as the run's config.
type runConfig struct {
	Config
	Sizing Sizing `json:"sizing"`
	// Target is the per-process target configuration actually used.
	Target target.Config `json:"target"`
}
