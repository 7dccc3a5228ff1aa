package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
)

// knob ties one flag to one config field. The knobs table is the only
// place that knows both: the flags of the specs (spec.Client,
// spec.Server, spec.HTTPFleet) and of the simulator's model are defined from it, with
// their defaults taken from the spec; fillKnobs copies their values into
// the specs; flagError names the flag of a field error. A field whose flag
// a command defines by hand (--duration, --out) is listed too, so its
// errors name the flag.
type knob struct {
	// flag is the flag's name without dashes.
	flag string
	// field is the field's path as a *spec.FieldError names it:
	// "Client.MsgSize", "Server.Backlog", "Sim.RTT", "Storm.Duration".
	field string
	// usage is the flag's help; `NAME` in it names the value.
	usage string
	// def shows the spec's default as the flag's value; without it the
	// flag's value is the field's zero, which means the default too, and
	// usage or defText says what that is.
	def bool
	// defText is what --help shows as the default, where that is not a
	// plain value.
	defText string
	// parse turns a string flag into the field's value (a policy, a list
	// of addresses).
	parse func(string) (any, error)
	// negate makes a bool flag the field's opposite: --tls-resume sets
	// TLSNoResume to false, so the field's zero value is still the default.
	negate bool
	// in says which commands take the knob as a flag defined from the
	// table (the field lists below); a knob a command takes alone
	// (loadgen's --subprotocol) is named by that command.
	in knobSet
}

// knobs is the table. Fields under Client, Server, HTTPFleet and Sim are defined and
// filled from it (knobFlags, fillKnobs); the rest are defined by their
// commands and listed here for flagError.
var knobs = []knob{
	// The fleet: spec.Client.
	{flag: "url", field: "Client.URL", usage: "server `URL` (ws:// or wss://; required)"},
	{flag: "clients", field: "Client.Clients", in: inFleet | inSimFleet, usage: fmt.Sprintf("number of clients `N`; above %s they run in several worker processes", thousands(storm.PerProcess))},
	{flag: "ramp", field: "Client.Ramp", in: inFleet | inSimFleet, usage: "first connects per second `R` (0 = all at once, bounded by --max-inflight; run and bench: 90% of --accept-rate when one is set)"},
	{flag: "max-inflight", field: "Client.MaxInflight", in: inFleet | inSimFleet, usage: "first connects in flight at once `N` over the whole fleet, shared among its processes (0 = 2000); never limits reconnects"},
	{flag: "max-attempt-rate", field: "Client.MaxAttemptRate", in: inFleet, usage: "reconnect attempts per second `R` the whole fleet starts at most, shared among its processes; a retry due beyond it waits (0 = no cap; ws:// clients)"},
	{flag: "policy", field: "Client.Policy", in: inFleet | inSimFleet, usage: "reconnect backoff policy `SPEC` (see stampede policy)", parse: func(s string) (any, error) { return backoff.Parse(s) }},
	{flag: "seed", field: "Client.Seed", in: inFleet | inSimFleet, usage: "run seed `S`: every random draw is reproducible"},
	{flag: "source-ips", field: "Client.SourceIPs", in: inFleet, usage: "source addresses `LIST`, e.g. 127.0.0.2,127.0.0.3 or 127.0.0.2-127.0.0.9", parse: func(s string) (any, error) { return loadgen.ParseSourceIPs(s) }},
	{flag: "connect-timeout", field: "Client.ConnectTimeout", in: inFleet | inSimFleet, def: true, usage: "TCP connect deadline `D`"},
	{flag: "handshake-timeout", field: "Client.HandshakeTimeout", in: inFleet | inSimFleet, def: true, usage: "deadline `D` from TCP connected to the 101 answer"},
	{flag: "ping-interval", field: "Client.PingInterval", in: inFleet, defText: "10s, or longer above 100,000 clients so the fleet sends at most 10,000 pings a second", usage: "keepalive: ping the server after `D` without a frame from it, so a connection that died silently (a blackhole) is found (negative, e.g. -1s: off)"},
	{flag: "pong-timeout", field: "Client.PongTimeout", in: inFleet, defText: "the ping interval", usage: "keepalive: close a connection as ping_timeout when nothing answers its ping within `D`"},
	{flag: "syn-retries", field: "Client.SynRetries", in: inFleet | inSimFleet, defText: "0, the kernel's setting", usage: "TCP_SYNCNT `N` per socket"},
	{flag: "no-retry-after", field: "Client.NoRetryAfter", in: inFleet | inSimFleet, usage: "ignore the server's Retry-After on 429/503, and the delay in a 1012/1013 close's reason, and wait what --policy says (a client that does not honour the header)"},
	{flag: "mode", field: "Client.Mode", in: inFleet, def: true, usage: "message `MODE`: none (hold, answer pings), echo (send, time the echo) or stampede (the message protocol of docs/protocol.md: rooms, ACKs, retry queue, resume)"},
	{flag: "msg-rate", field: "Client.MsgRate", in: inFleet, def: true, usage: "echo or stampede messages per second per client `R`"},
	{flag: "msg-size", field: "Client.MsgSize", in: inFleet, def: true, usage: "echo payload `BYTES`"},
	{flag: "rooms", field: "Client.Rooms", in: inFleet, usage: "stampede mode: rooms `N` of the whole fleet, client i in room i mod N (0 = rooms of 10 consecutive clients)"},
	{flag: "no-resume", field: "Client.NoResume", in: inFleet, usage: "stampede mode: after a reconnect rejoin from now instead of resuming (what was sent meanwhile is lost, and counted)"},
	{flag: "no-retry-queue", field: "Client.NoRetryQueue", in: inFleet, usage: "stampede mode: drop un-ACKed messages at a disconnect instead of resending them (counted as unacked_dropped)"},
	{flag: "quiet-period", field: "Client.QuietPeriod", in: inFleet, def: true, usage: "stampede mode: stop sending `D` before the end, so deliveries land before loss is counted"},
	{flag: "reactors", field: "Client.Reactors", in: inFleet, usage: "epoll reactor goroutines `N` (0 = min(GOMAXPROCS, 4))"},
	{flag: "header", field: "Client.Header"},
	{flag: "subprotocol", field: "Client.Protocols", usage: "subprotocol `NAME` to offer (repeatable)"},
	{flag: "protocol", field: "Client.Session.Protocol", in: inFleet | inVerify, usage: "session protocol `NAME` the clients speak over the WebSocket: socketio, graphql-ws, mqtt, stomp, phoenix, signalr, actioncable or centrifuge (docs/protocols.md); its messages come from the --config file's section of that name; it offers the subprotocol the server expects, and a client is back when its session is; --mode none only; run and bench: socketio, mqtt or actioncable, which the bundled target serves"},
	{flag: "protocol", field: "Server.Session"}, // run, bench and advise --verify set it from --protocol
	{flag: "insecure", field: "Client.TLSInsecure", usage: "wss://: accept any server certificate (a self-signed target)"},
	{flag: "ca", field: "Client.TLSCAFile", usage: "wss://: verify the server against the CA certificates in PEM `FILE` instead of the system roots"},
	{flag: "cert", field: "Client.TLSCertFile", usage: "wss://: client certificate PEM `FILE` (with --key)"},
	{flag: "key", field: "Client.TLSKeyFile", usage: "wss://: client key PEM `FILE` (with --cert)"},
	{flag: "server-name", field: "Client.TLSServerName", defText: "the URL's host", usage: "wss://: `NAME` sent as SNI and checked in the server's certificate"},
	{flag: "tls-groups", field: "Client.TLSGroups", in: inFleet, parse: parseList, defText: "crypto/tls's: x25519mlkem768 first, as current browsers", usage: "wss://: the key exchange groups the clients offer, `LIST` of x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, secp256r1, secp384r1, secp521r1 (classical groups only: a fleet of older clients, whose handshakes in flight hold no post-quantum key)"},
	{flag: "tls-resume", field: "Client.TLSNoResume", negate: true, in: inFleet | inSimFleet, usage: "wss://: each client keeps its TLS session and resumes it at its next handshake, as a browser does (--tls-resume=false: a full handshake every time)"},
	{flag: "secret-header", field: "Client.SecretHeaders", usage: "header `NAME` whose value is secret too, written as <redacted> (repeatable)"},

	// The server: spec.Server.
	{flag: "addr", field: "Server.Addr", in: inTarget, def: true, usage: "listen address `IP:PORT` (port 0: a free one; IPv6 as [::1]:PORT)"},
	{flag: "backlog", field: "Server.Backlog", in: inTarget | inRunTarget | inSimServer, def: true, usage: "listen backlog `N`: the accept queue holds N+1 (capped by net.core.somaxconn)"},
	{flag: "accept-rate", field: "Server.AcceptRate", in: inTarget | inRunTarget | inSimServer, usage: "accepts per second `R` (0 = unlimited); above it the backlog fills"},
	{flag: "accept-burst", field: "Server.AcceptBurst", in: inTarget | inRunTarget | inSimServer, defText: "0, 10 ms worth of --accept-rate, at least 1", usage: "accepts `N` allowed at once under --accept-rate"},
	{flag: "admit-ramp", field: "Server.AdmitRamp", in: inTarget | inRunTarget | inSimServer, usage: "admission ramp: for `D` after a restarted process starts accepting (target: from its start; run: the processes a chaos restart starts), its accept rate rises linearly from --admit-floor to --accept-rate, so the server takes the returning herd slowly while it warms up (needs --accept-rate; 0 = full rate at once)"},
	{flag: "admit-floor", field: "Server.AdmitFloor", in: inTarget | inRunTarget | inSimServer, defText: "a tenth of --accept-rate", usage: "accepts per second `R` an admission ramp starts from (needs --admit-ramp; of the whole target, shared by its processes in run)"},
	{flag: "shed", field: "Server.Shed", in: inTarget | inRunTarget | inSimServer, usage: "load shedding with a hint: upgrades beyond --accept-rate (ramped) are answered 503 with a Retry-After drawn from 1 s to `D` in whole seconds, at once, instead of waiting in a full accept queue, which is then not paced (needs --accept-rate; at least 1s; 0 = off)"},
	{flag: "handshake-cost", field: "Server.HandshakeCost", in: inTarget | inRunTarget | inSimServer, usage: "CPU time `D` burned per admitted upgrade, standing in for TLS and auth"},
	{flag: "handshake-timeout", field: "Server.HandshakeTimeout", in: inTarget, def: true, usage: "limit `D` on the TLS handshake plus the upgrade"},
	{flag: "tls", field: "Server.TLS", in: inTarget | inRunTarget | inSimServer, usage: "serve wss:// with a self-signed certificate for 127.0.0.1, ::1 and localhost"},
	{flag: "cert", field: "Server.CertFile", in: inTarget, usage: "PEM certificate `FILE` to serve wss:// with (with --key)"},
	{flag: "key", field: "Server.KeyFile", in: inTarget, usage: "PEM private key `FILE` of --cert"},
	{flag: "tls-cert-kind", field: "Server.TLSCertKind", in: inTarget | inRunTarget | inSimServer, defText: "ecdsa-p256 with --tls", usage: "wss://: the self-signed certificate's key `KIND`: ecdsa-p256, rsa-2048 or rsa-4096 (implies --tls)"},
	{flag: "tls-version", field: "Server.TLSVersion", in: inTarget | inRunTarget, defText: "1.3 with --tls", usage: "wss://: the highest TLS version `V` served, 1.2 or 1.3"},
	{flag: "no-tls-tickets", field: "Server.TLSNoTickets", in: inTarget | inRunTarget | inSimServer, usage: "wss://: no session tickets: every handshake is full"},
	{flag: "tls-ticket-keys", field: "Server.TLSTicketKeys", in: inTarget | inRunTarget | inSimServer, defText: "keys in memory, lost at a restart", usage: "wss://: session-ticket key `FILE` (created if absent) read by every target process, so that keys survive a restart and clients resume (implies --tls)"},
	{flag: "tls-ticket-rotate", field: "Server.TLSTicketRotate", in: inTarget | inRunTarget, defText: "24h with --tls-ticket-keys", usage: "wss://: put a new ticket key first in --tls-ticket-keys when the newest is `D` old; the older ones still decrypt (a week of them)"},
	{flag: "max-conns", field: "Server.MaxConns", in: inTarget | inRunTarget, usage: "open connections `N` above which upgrades are answered 503 (0 = no cap)"},
	{flag: "reject-retry-after", field: "Server.RejectRetryAfter", in: inTarget | inRunTarget, def: true, usage: "Retry-After `D` sent with a --max-conns rejection (whole seconds)"},
	{flag: "http-limit", field: "Server.HTTPLimit", in: inTarget, usage: "requests per second `R` the HTTP endpoint " + target.HTTPPath + " answers 200 (token bucket; 0 = no limit); above it --limit-status"},
	{flag: "http-burst", field: "Server.HTTPBurst", in: inTarget, defText: "0, 100 ms worth of --http-limit, at least 1", usage: "requests `N` answered 200 at once under --http-limit"},
	{flag: "limit-status", field: "Server.LimitStatus", in: inTarget, def: true, usage: "status `CODE` above --http-limit: 429, 503 or 529"},
	{flag: "retry-after", field: "Server.LimitRetryAfter", in: inTarget, def: true, usage: "Retry-After `D` sent with --limit-status (whole seconds, rounded up)"},
	{flag: "hold", field: "Server.Hold", in: inTarget, usage: "listen at once but accept nothing for `D` (port open, backlog fills, SYNs time out)"},
	{flag: "store", field: "Server.Store", in: inTarget | inRunTarget, usage: "speak the message protocol (docs/protocol.md) on the store at `URL`: jetstream:///DIR (NATS JetStream embedded, run by the group's owner and shared by its --procs; what run --mode stampede uses for several target processes), file:///DIR or DIR (embedded log, one process; what run uses for one), redis://127.0.0.1:6379/0, postgres://USER@127.0.0.1:5432/DB, nats://HOST:PORT; fsync before ACK for the embedded ones; empty: echo. run puts a redis or postgres store's data under its run id and removes it at the end unless the URL has keep=1"},
	{flag: "no-dedupe", field: "Server.NoDedupe", in: inTarget | inRunTarget, usage: "store and deliver a resent message again under a new seq (shows what dedupe prevents; needs --store)"},
	{flag: "retention", field: "Server.Retention", in: inTarget | inRunTarget, defText: fmt.Sprint(store.DefaultRetention), usage: "messages `N` per room the store keeps for resume (needs --store)"},

	// The HTTP fleet's load: spec.HTTPFleet.
	{flag: "clients", field: "HTTPFleet.Clients", in: inHTTPFleet, defText: "none", usage: "run a fleet of `N` clients instead of one request"},
	{flag: "rate", field: "HTTPFleet.Rate", in: inHTTPFleet, defText: "1 per client", usage: "fleet: offered load `R` in requests per second, shared by the clients"},
	{flag: "duration", field: "HTTPFleet.Duration", in: inHTTPFleet, def: true, usage: "fleet: how long requests are scheduled `D`"},
	{flag: "grace", field: "HTTPFleet.Grace", in: inHTTPFleet, def: true, usage: "fleet: time `D` the last requests may finish in"},
	{flag: "deadline", field: "HTTPFleet.Deadline", in: inHTTPFleet, defText: "none", usage: "fleet: each request's deadline `D` from its scheduled send; a retry that cannot start before it is not made"},

	// The simulator's model: sim.Config.
	{flag: "syn-schedule", field: "Sim.SynSchedule", in: inSimModel, defText: "1s,2s,3s,4s,5s,7s,11s,19s,35s,67s,131s (this kernel's)", usage: "model: SYN retransmit times `LIST` from the first SYN", parse: parseDurations},
	{flag: "kernel-hz", field: "Sim.HZ", in: inSimModel, def: true, usage: "model: the kernel's tick rate `HZ`: its TCP retransmit timers fire together on a timer wheel of that many jiffies a second (negative: exact timers)"},
	{flag: "netdev-backlog", field: "Sim.NetdevBacklog", in: inSimModel, def: true, usage: "model: net.core.netdev_max_backlog `N`: of the retransmits one timer tick fires, those beyond N+1 are dropped before TCP sees them (negative: no limit)"},
	{flag: "no-syn-cookies", field: "Sim.NoSynCookies", in: inSimModel, usage: "model: SYN cookies off (a SYN that finds the SYN queue full is dropped)"},
	{flag: "proc-capacity", field: "Sim.ProcCapacity", in: inSimModel, def: true, usage: "model: upgrades per second `R` one target process completes when nothing else limits it"},
	{flag: "rtt", field: "Sim.RTT", in: inSimModel, def: true, usage: "model: handshake round trip `D`: SYNs within it see the same accept queue"},
	{flag: "data-rto", field: "Sim.DataRTO", in: inSimModel, def: true, usage: "model: tcp_rto_min `D`: an upgrade request whose final ACK was dropped is sent again D, D, 2D, 4D... apart (a loss probe, then retransmit timeouts)"},
	{flag: "stop-time", field: "Sim.StopTime", in: inSimModel, def: true, usage: "model: a restarted process's exit `D` (closing its connections; its listener still open, accepting nothing), before the down= time with the port closed; with --cores the least, the processes exiting after their last close at their share of the cores (negative: none)"},
	{flag: "start-time", field: "Sim.StartTime", in: inSimModel, def: true, usage: "model: a restarted process's start, from listening to accepting, `D` (negative: none)"},
	{flag: "close-rate", field: "Sim.CloseRate", in: inSimModel, def: true, usage: "model: connections per second `R` a stopping target process closes (negative: all at once)"},
	{flag: "issue-rate", field: "Sim.IssueRate", in: inSimModel, usage: "model: attempts per second `R` the fleet's machine can start; given, the fleet also shares that machine's kernel timers and softnet backlog (0 = unlimited: independent devices, each its own kernel; this machine's loadgens started 48,000-106,000 a second in their fastest 100 ms in calibration)"},
	{flag: "reactor-cost", field: "Sim.ReactorCost", in: inSimModel, defText: "none", usage: "model: what an attempt costs its loadgen reactor `D` (a real run's resources.loadgen.cpu_us_per_attempt): a reactor writes a completed connect's upgrade request only when it has done the attempts before it, so a burst of connects reaches the target's deferred accept spread over the reactors' time, two a loadgen process as on this project's 2-core machine (none: the request one --rtt after the SYN)"},
	{flag: "cores", field: "Sim.Cores", in: inSimModel, usage: "model: both ends share `N` cores, as a run on one machine does: every attempt, retransmit, upgrade, close and ping takes CPU from them (at the costs measured on this project's 2-core machine, or another machine's given by --cpu-per-connect or --cpu-costs), work that finds them busy waits, and the fleet shares the machine's kernel timers and softnet backlog (0 = not modelled)"},
	{flag: "cpu-costs", field: "Sim.CPU", defText: "the costs measured on this project's 2-core machine, docs/simulator.md", usage: "model, with --cores: the machine's CPU time per operation, `SPEC` key=value,... with the keys attempt, upgrade, disconnect, accept, close, segment, ping, slice (durations), loadgen_share, and loadgen_growth and target_growth (how much each end's connect costs grow a million clients, numbers), e.g. attempt=30us,upgrade=40us,accept=60us; a key left out keeps this project's figure", parse: func(s string) (any, error) { return sim.ParseCPUCosts(s) }},
	{flag: "duration", field: "Sim.Duration"},
	{flag: "lb-rate", field: "Sim.LB.Rate"},
	{flag: "lb-queue", field: "Sim.LB.Queue"},
	{flag: "chaos", field: "Sim.Schedule"},

	// Fields whose flags their commands define.
	{flag: "duration", field: "Storm.Duration"},
	{flag: "agents", field: "Storm.Agents"},
	{flag: "on-agent-loss", field: "Storm.OnAgentLoss"},
	{flag: "chaos", field: "Storm.Schedule"},
	{flag: "proxy", field: "Storm.Proxy"},
	{flag: "loadgen-procs", field: "Storm.LoadgenProcs"},
	{flag: "procs", field: "Server.Procs"},
	{flag: "out", field: "Storm.Out"},
	{flag: "policies", field: "Storm.Policies"},
	{flag: "haproxy-socket", field: "Storm.HAProxySockets"},
	{flag: "control-addr", field: "RunConfig.ControlAddr"},
	{flag: "from", field: "Contention.From"},
	{flag: "to", field: "Contention.To"},
	{flag: "step", field: "Contention.Step"},
	{flag: "trials", field: "Contention.Trials"},
	{flag: "url", field: "Drill.URL"},
	{flag: "restart-cmd", field: "Drill.RestartCmd"},
	{flag: "wait-for-outage", field: "Drill.WaitForOutage"},
	{flag: "at", field: "Drill.At"},
	{flag: "restart-timeout", field: "Drill.CommandTimeout"},
	{flag: "junit", field: "Drill.JUnit"},
	{flag: "min-connected", field: "Drill.MinConnected"},
	{flag: "secret-header", field: "HTTP.SecretHeaders"},
	{flag: "header", field: "HTTP.Header"},
	{flag: "retries", field: "HTTP.Retry"},
	{flag: "metrics-addr", field: "Metrics.Addr"},
	{flag: "pushgateway", field: "Metrics.Pushgateway"},
	{flag: "live-addr", field: "Live.Addr"},
	{flag: "live-tls-cert", field: "Live.TLSCert"},
	{flag: "live-tls-key", field: "Live.TLSKey"},
	{flag: "otlp-endpoint", field: "Metrics.OTLP.Endpoint"},
	{flag: "otlp-protocol", field: "Metrics.OTLP.Protocol"},
	{flag: "otlp-header", field: "Metrics.OTLP.Headers"},
	{flag: "otlp-interval", field: "Metrics.OTLP.Interval"},
	{flag: "listen", field: "Proxy.Listen"},
	{flag: "upstream", field: "Proxy.Upstream"},
	{flag: "reactors", field: "Proxy.Reactors"},
	{flag: "backlog", field: "Proxy.Backlog"},
	{flag: "max-conns", field: "Proxy.MaxConns"},
	{flag: "connect-timeout", field: "Proxy.ConnectTimeout"},
	{flag: "proc", field: "Proxy.Proc"},
	{flag: "procs", field: "Proxy.Procs"},
	{flag: "duration", field: "Proxy.Duration"},
	{flag: "control-addr", field: "Proxy.ControlAddr"},
	{flag: "chaos", field: "Proxy.Schedule"},
	{flag: "fault", field: "Proxy.Initial"},
	{flag: "out", field: "Sim.Out"},
	{flag: "allow-remote", field: "Drill.AllowRemote"},
	{flag: "allow-remote", field: "Storm.AllowRemote"},
	{flag: "token-file", field: "Hub.TokenFile"},
	{flag: "nats", field: "Hub.NATS"},
	{flag: "listen", field: "Hub.Listen"},
	{flag: "tls-cert", field: "Hub.TLSCert"},
	{flag: "tls-key", field: "Hub.TLSKey"},
	{flag: "role", field: "Join.Role"},
	{flag: "name", field: "Join.Name"},
	{flag: "capacity", field: "Join.Capacity"},
	{flag: "nats", field: "Join.NATS"},
	{flag: "objective", field: "Advise.Objective"},
	{flag: "max-delay", field: "Advise.MaxDelay"},
	{flag: "library", field: "Advise.Library"},
	{flag: "seeds", field: "Advise.Seeds"},
	{flag: "candidates", field: "Advise.Budget"},
	{flag: "from", field: "Advise.From"},
	{flag: "from", field: "Advise.Capacity"},
}

// Which commands take which knobs: a knob's in, and the field lists
// derived from it in the table's order.

// knobSet is a set of the groups of commands a knob is a flag of.
type knobSet uint8

const (
	// inFleet: every command running a fleet (loadgen, run, bench, drill).
	inFleet knobSet = 1 << iota
	// inTarget: target.
	inTarget
	// inRunTarget: the server's knobs of run and bench.
	inRunTarget
	// inSimFleet, inSimServer and inSimModel: simulate and advise, the
	// fleet's and server's knobs a simulation takes as a run does, and
	// the model's own.
	inSimFleet
	inSimServer
	inSimModel
	// inHTTPFleet: http.
	inHTTPFleet
	// inVerify: advise's fleet knobs that only its real runs (--verify)
	// use.
	inVerify
)

// knobsIn returns the fields of the knobs in set, in the table's order.
func knobsIn(set knobSet) []string {
	var out []string
	for _, k := range knobs {
		if k.in&set != 0 {
			out = append(out, k.field)
		}
	}
	return out
}

// The per-command field lists. fleetFields are in the order --help lists
// them (the first six lead, around --loadgen-procs and --duration).
var (
	fleetFields     = knobsIn(inFleet)
	targetFields    = knobsIn(inTarget)
	runTargetFields = knobsIn(inRunTarget)
	simFleetFields  = knobsIn(inSimFleet)
	simServerFields = knobsIn(inSimServer)
	simModelFields  = knobsIn(inSimModel)
	httpFleetFields = knobsIn(inHTTPFleet)
	verifyFields    = knobsIn(inVerify)
)

// knobRoots are the types whose fields the table defines flags for, with
// the value that holds every default.
var knobRoots = map[string]reflect.Value{
	"Client":    reflect.ValueOf(spec.Client{}.WithDefaults()),
	"Server":    reflect.ValueOf(spec.Server{}.WithDefaults()),
	"Sim":       reflect.ValueOf(sim.Defaults()),
	"HTTPFleet": reflect.ValueOf(spec.HTTPFleet{}.WithDefaults()),
}

// knobOf returns the knob of a field path; a missing one is a programming
// error.
func knobOf(field string) knob {
	for _, k := range knobs {
		if k.field == field {
			return k
		}
	}
	panic("stampede: no knob for " + field)
}

// flagOf names the flag of a field path; "" if it has none.
func flagOf(field string) string {
	for _, k := range knobs {
		if k.field == field {
			return k.flag
		}
	}
	return ""
}

// specField returns the field of root value v that path names, through
// nested structs ("Client.Session.Protocol").
func specField(v reflect.Value, path string) reflect.Value {
	_, rest, _ := strings.Cut(path, ".")
	for _, name := range strings.Split(rest, ".") {
		v = v.FieldByName(name)
		if !v.IsValid() {
			panic("stampede: no field " + path)
		}
	}
	return v
}

var durationType = reflect.TypeFor[time.Duration]()

// knobFlags returns the flags of the given fields, in that order.
func knobFlags(fields ...string) []cli.Flag {
	out := make([]cli.Flag, 0, len(fields))
	for _, field := range fields {
		out = append(out, knobFlag(knobOf(field)))
	}
	return out
}

// knobFlag defines k's flag from its field's type and default.
func knobFlag(k knob) cli.Flag {
	root, _, _ := strings.Cut(k.field, ".")
	dv, ok := knobRoots[root]
	if !ok {
		panic("stampede: knob " + k.field + " has no spec to define its flag from")
	}
	f := specField(dv, k.field)
	if !k.def {
		f = reflect.Zero(f.Type())
	}
	switch {
	case k.parse != nil:
		return &cli.StringFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText}
	case f.Type() == durationType:
		return &cli.DurationFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: time.Duration(f.Int())}
	}
	switch f.Kind() {
	case reflect.Int:
		return &cli.IntFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: int(f.Int())}
	case reflect.Uint64:
		return &cli.Uint64Flag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: f.Uint()}
	case reflect.Float64:
		return &cli.Float64Flag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: f.Float()}
	case reflect.Bool:
		return &cli.BoolFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: f.Bool() != k.negate}
	case reflect.String:
		return &cli.StringFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText, Value: f.String()}
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.String {
			return &cli.StringSliceFlag{Name: k.flag, Usage: k.usage, DefaultText: k.defText}
		}
	}
	panic(fmt.Sprintf("stampede: knob %s: no flag for a %s", k.field, f.Type()))
}

// fillKnobs copies the flags of the given fields into dst, a pointer to
// the spec (or model) that the fields' paths are led by: fillKnobs(c,
// &cfg.Client, fields...) sets the Client fields among them. A flag the
// command does not have is skipped.
func fillKnobs(c *cli.Context, dst any, fields ...string) error {
	v := reflect.ValueOf(dst).Elem()
	root := v.Type().Name()
	if v.Type() == reflect.TypeFor[sim.Config]() {
		root = "Sim"
	}
	for _, field := range fields {
		if !strings.HasPrefix(field, root+".") {
			continue
		}
		k := knobOf(field)
		if flagNamed(c.Command.Flags, k.flag) == nil {
			continue
		}
		f := specField(v, field)
		switch {
		case k.parse != nil:
			x, err := k.parse(c.String(k.flag))
			if err != nil {
				return fmt.Errorf("--%s: %w", k.flag, err)
			}
			f.Set(reflect.ValueOf(x))
			continue
		case f.Type() == durationType:
			f.SetInt(int64(c.Duration(k.flag)))
			continue
		}
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(int64(c.Int(k.flag)))
		case reflect.Uint64:
			f.SetUint(c.Uint64(k.flag))
		case reflect.Float64:
			f.SetFloat(c.Float64(k.flag))
		case reflect.Bool:
			f.SetBool(c.Bool(k.flag) != k.negate)
		case reflect.String:
			f.SetString(c.String(k.flag))
		case reflect.Slice:
			f.Set(reflect.ValueOf(c.StringSlice(k.flag)))
		}
	}
	return nil
}

// flagError rewrites a *spec.FieldError as one line naming the flag of
// its field, and the flags of the fields its reason names (`--backlog: -1
// must not be negative`); any other error is returned as it is. One
// function serves every command, so `run` names --backlog or --msg-size
// exactly as `target` and `loadgen` do. A field of a struct that one flag
// gives as key=value,... (Sim.CPU.Attempt, of --cpu-costs) is named by the
// flag and its key: `--cpu-costs: attempt: must not be negative`.
func flagError(err error) error {
	var fe *spec.FieldError
	if err == nil || !errors.As(err, &fe) || fieldFlag(fe.Field) == "" {
		return err
	}
	return errors.New(fe.Render(func(field string) string {
		if name := fieldFlag(field); name != "" {
			return name
		}
		return field
	}))
}

// fieldFlag names a field as a command line gives it: its flag
// ("--backlog"), or the flag of the struct it is a field of and its key,
// the field's JSON name ("--cpu-costs: attempt"); "" if it has none.
func fieldFlag(field string) string {
	if name := flagOf(field); name != "" {
		return dashed(name)
	}
	if arg, ok := argFields[field]; ok {
		return arg
	}
	if name := sectionKey(field); name != "" {
		return name
	}
	i := strings.LastIndexByte(field, '.')
	if i < 0 {
		return ""
	}
	parent, sub := field[:i], field[i+1:]
	name := flagOf(parent)
	root, _, _ := strings.Cut(parent, ".")
	dv, ok := knobRoots[root]
	if name == "" || !ok {
		return ""
	}
	t := specField(dv, parent).Type()
	if t.Kind() != reflect.Struct {
		return ""
	}
	f, ok := t.FieldByName(sub)
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if key == "" {
		key = f.Name
	}
	return dashed(name) + ": " + key
}

// argFields are fields given by a positional argument, not a flag: named
// as the usage line names the argument.
var argFields = map[string]string{"HTTP.URL": "URL"}

// parseDurations parses a comma-separated list of durations; empty is nil.
func parseDurations(s string) (any, error) {
	var ds []time.Duration
	if s == "" {
		return ds, nil
	}
	for _, w := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(w))
		if err != nil {
			return nil, fmt.Errorf("%q: want increasing positive durations, e.g. 1s,3s,7s", s)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// parseList splits a comma-separated flag value; "" is no list.
func parseList(s string) (any, error) {
	if s == "" {
		return []string(nil), nil
	}
	return strings.Split(s, ","), nil
}
