package backoff

import (
	"math"
	"time"
)

// The library presets: each one reproduces a client library's default
// reconnect rule as read in its published source (Source names the package,
// version and file). Millisecond arithmetic is done in float64 as
// JavaScript does it; docs/clients.md gives each rule and its proof.

// Option constructors.
func durOpt(name string, def, lo, hi time.Duration) option {
	return option{name: name, kind: optDur, def: float64(def), min: float64(lo), max: float64(hi)}
}

func numOpt(name string, def, lo, hi float64) option {
	return option{name: name, kind: optNum, def: def, min: lo, max: hi}
}

func intOpt(name string, def, lo, hi int) option {
	return option{name: name, kind: optInt, def: float64(def), min: float64(lo), max: float64(hi)}
}

func enumOpt(name string, names ...string) option {
	return option{name: name, kind: optEnum, max: float64(len(names) - 1), enum: names}
}

func listOpt(name string) option { return option{name: name, kind: optList} }

// perProcessOpt is the ClientsPerProcess option: 1 = each client its own
// process (browser tabs).
var perProcessOpt = intOpt(ClientsPerProcess, 1, 1, math.MaxInt32)

// noLimit is the limit of a rule that never gives up.
func noLimit(*Library) int { return 0 }

// intLimit is a limit read from an option where 0 means never.
func intLimit(name string) func(*Library) int {
	return func(l *Library) int { return int(l.value(name)) }
}

const day = 24 * time.Hour

// presets lists every preset in the docs' order; set in init because the
// rules look presets up by name.
var presets []*preset

func init() {
	presets = []*preset{
		socketIO, signalR, phoenix, centrifuge, graphqlWS, reconnectingWS, actionCable,
		pusher, ably, mqttJS, paho, nats, grpcGo, stompJS, sgcWebSockets,
	}
}

// socket.io-client: Manager.reconnect with contrib/backo2.js's duration.
var socketIO = &preset{
	name:   "socketio",
	source: Source{"socket.io-client", "4.8.4", "build/cjs/manager.js, build/cjs/contrib/backo2.js"},
	rule:   "d = reconnectionDelay·2^(n−1); dev = floor(r·0.5·d); d−dev when floor(10r) is even, else d+dev; then min(d, 5 s); unlimited; reset on close",
	opts: []option{
		durOpt("reconnectionDelay", time.Second, time.Millisecond, day),
		durOpt("reconnectionDelayMax", 5*time.Second, time.Millisecond, day),
		numOpt("randomizationFactor", 0.5, 0, 1),
		intOpt("reconnectionAttempts", 0, 1, math.MaxInt32),
	},
	limit: intLimit("reconnectionAttempts"),
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		ms := l.ms("reconnectionDelay") * math.Pow(2, float64(d.attempt-1))
		if j := l.value("randomizationFactor"); j > 0 && j <= 1 {
			r := d.u(0)
			dev := math.Floor(r * j * ms)
			if int64(math.Floor(r*10))&1 == 0 {
				ms -= dev
			} else {
				ms += dev
			}
		}
		return Decision{Delay: fromMS(float64(toInt32(min(ms, l.ms("reconnectionDelayMax")))))}
	},
}

// toInt32 is JavaScript's x|0.
func toInt32(x float64) int32 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return int32(uint32(int64(math.Trunc(math.Mod(x, 1<<32)))))
}

// @microsoft/signalr: withAutomaticReconnect's DefaultReconnectPolicy.
var signalR = &preset{
	name:    "signalr",
	source:  Source{"@microsoft/signalr", "11.0.0", "src/DefaultReconnectPolicy.ts"},
	rule:    "delays[n−1] of 0, 2, 10, 30 s, then gives up",
	opts:    []option{listOpt("delays")},
	defList: []time.Duration{0, 2 * time.Second, 10 * time.Second, 30 * time.Second},
	limit:   func(l *Library) int { return len(l.items()) },
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		return Decision{Delay: l.items()[d.attempt-1]}
	},
}

// phoenix: Socket's reconnectTimer and its reconnectAfterMs.
var phoenix = &preset{
	name:   "phoenix",
	source: Source{"phoenix", "1.8.16", "assets/js/phoenix/socket.js, assets/js/phoenix/timer.js"},
	rule:   "reconnectAfterMs[n−1] of 10, 50, 100, 150, 200, 250, 500, 1000, 2000 ms, then 5 s for ever (a 0 entry also means 5 s)",
	opts: []option{
		listOpt("reconnectAfterMs"),
		durOpt("reconnectAfterMsElse", 5*time.Second, time.Millisecond, day),
	},
	defList: []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		150 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second},
	limit: noLimit,
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		if it := l.items(); d.attempt <= len(it) && it[d.attempt-1] != 0 {
			return Decision{Delay: it[d.attempt-1]}
		}
		return Decision{Delay: l.dur("reconnectAfterMsElse")}
	},
}

// centrifuge: Centrifuge._getReconnectDelay and backoff().
var centrifuge = &preset{
	name:   "centrifuge",
	source: Source{"centrifuge", "5.8.0", "build/index.js (backoff, _getReconnectDelay)"},
	rule:   "min(max, min + floor(r·(min(max, min·2^(n−1)) + 1))) ms, min 500 ms, max 20 s; reset on the connect reply",
	opts: []option{
		durOpt("minReconnectDelay", 500*time.Millisecond, time.Millisecond, day),
		durOpt("maxReconnectDelay", 20*time.Second, time.Millisecond, day),
	},
	limit: noLimit,
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		lo, hi := l.ms("minReconnectDelay"), l.ms("maxReconnectDelay")
		step := min(d.attempt-1, 31)
		interval := math.Floor(d.u(0) * (min(hi, lo*math.Pow(2, float64(step))) + 1))
		return Decision{Delay: fromMS(min(hi, lo+interval))}
	},
}

// graphqlFatal reports whether graphql-ws 6.4.2 gives up on a close code:
// its named codes, and 1000-1999 but for 1000, 1001, 1005, 1006, 1012,
// 1013 and 1014 (isFatalInternalCloseCode).
func graphqlFatal(code int) bool {
	switch code {
	case 4500, 4005, 4400, 4004, 4401, 4406, 4409, 4429:
		return true
	case 1000, 1001, 1005, 1006, 1012, 1013, 1014:
		return false
	}
	return code >= 1000 && code <= 1999
}

// graphql-ws: createClient's retryWait (randomisedExponentialBackoff).
var graphqlWS = &preset{
	name:   "graphql-ws",
	source: Source{"graphql-ws", "6.4.2", "dist/client.js"},
	rule:   "2^(n−1) s + floor(r·2700 + 300) ms after a connection closes; gives up after retryAttempts (5) and at the first attempt that fails to open (its error event is not a close event); close 4500, 4005, 4400, 4004, 4401, 4406, 4409, 4429 and 1002-1999 (but 1005, 1006, 1012-1014) stop it; after a 1000 close it reconnects at once",
	opts:   []option{intOpt("retryAttempts", 5, 0, math.MaxInt32)},
	limit: func(l *Library) int {
		if n := int(l.value("retryAttempts")); n > 0 {
			return n
		}
		return -1 // retryAttempts=0: never retry
	},
	next: func(l *Library, d retryDraws, c Conn) Decision {
		switch {
		case !c.Dropped:
			// An attempt that failed before it opened raises the socket's
			// error event first, and errorOrClosed passes the error, not a
			// close event, to shouldRetry (isLikeCloseEvent): the client
			// gives up.
			return Decision{Stop: Exhausted}
		case graphqlFatal(c.Close):
			return Decision{Stop: Refused}
		case c.Close == 1000:
			// shouldRetryConnectOrThrow returns locks > 0 without a wait
			// and without counting; only a failed attempt could follow,
			// and that ends the client (above).
			return Decision{}
		}
		return Decision{Delay: fromMS(math.Pow(2, float64(d.attempt-1))*1000 + math.Floor(d.u(0)*(3000-300)+300))}
	},
}

// reconnecting-websocket: _getNextDelay; minReconnectionDelay is drawn once
// at module load (DEFAULT), so every client of one process shares it.
var reconnectingWS = &preset{
	name:   "reconnecting-websocket",
	source: Source{"reconnecting-websocket", "4.4.0", "dist/reconnecting-websocket-cjs.js"},
	rule:   "min(10 s, minDelay·1.3^(n−1)), minDelay = 1 s + r·4 s drawn once per process; the count resets only after 5 s up (minUptime)",
	opts: []option{
		durOpt("minReconnectionDelay", 0, time.Millisecond, day),
		durOpt("maxReconnectionDelay", 10*time.Second, time.Millisecond, day),
		numOpt("reconnectionDelayGrowFactor", 1.3, 1, 1000),
		durOpt("minUptime", 5*time.Second, 0, day),
		intOpt("maxRetries", 0, 1, math.MaxInt32),
		perProcessOpt,
	},
	limit:  intLimit("maxRetries"),
	resets: func(l *Library, up time.Duration) bool { return up >= l.dur("minUptime") },
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		lo := 1000 + d.process()*4000
		if l.given("minReconnectionDelay") {
			lo = l.ms("minReconnectionDelay")
		}
		ms := lo * math.Pow(l.value("reconnectionDelayGrowFactor"), float64(d.attempt-1))
		return Decision{Delay: fromMS(min(ms, l.ms("maxReconnectionDelay")))}
	},
}

// @rails/actioncable: ConnectionMonitor's poll interval. The client does
// not react to a close: it reopens at the first poll that finds no ping
// for 6 s, so the rule needs the actioncable session protocol's pings.
var actionCable = &preset{
	name:     "actioncable",
	source:   Source{"@rails/actioncable", "8.1.0", "src/connection_monitor.js"},
	rule:     "polls every 6 s·1.15^min(n−1, 10)·(1 + j), j = r at the first poll, r·0.15 after; reopens once no ping came for 6 s",
	protocol: "actioncable",
	limit:    noLimit,
	next: func(_ *Library, d retryDraws, _ Conn) Decision {
		k := d.attempt - 1
		jmax := 0.15
		if k == 0 {
			jmax = 1
		}
		ms := 6 * 1000 * math.Pow(1.15, float64(min(k, 10))) * (1 + jmax*d.u(0))
		return Decision{Delay: fromMS(ms)}
	},
}

// pusher-js: ConnectionManager's close actions (protocol.getCloseAction)
// and retryIn; a failed attempt is retried when its strategy's timeout
// (15 s, doubling to 60 s) runs out.
var pusher = &preset{
	name:   "pusher",
	source: Source{"pusher-js", "8.6.0", "src/core/connection/connection_manager.ts, protocol/protocol.ts, strategies/sequential_strategy.ts"},
	rule:   "1 s after a drop; close 4000 and 4200-4299 at once, 4100-4199 1 s, 4001-4099 and >= 4300 stop; a failed attempt is retried 15 s, 30 s, then 60 s after it began",
	limit:  noLimit,
	next: func(_ *Library, d retryDraws, c Conn) Decision {
		if d.attempt == 1 || c.Dropped {
			switch {
			case c.Close == 4000 || c.Close >= 4200 && c.Close < 4300:
				return Decision{}
			case c.Close > 4000 && c.Close < 4100 || c.Close >= 4300:
				return Decision{Stop: Refused}
			}
			return Decision{Delay: time.Second}
		}
		t := min(15*time.Second<<min(d.attempt-2, 8), 60*time.Second)
		return Decision{Delay: max(t-c.SinceAttempt, 0)}
	},
}

// ably: ConnectionManager.notifyState's retry timers.
var ably = &preset{
	name:   "ably",
	source: Source{"ably", "2.28.0", "src/common/lib/transport/connectionmanager.ts, src/common/lib/util/utils.ts, defaults.ts"},
	rule:   "at once after a drop from connected; then 15 s·min((n+2)/3, 2)·(1 − 0.2r); suspended 120 s after the drop, then every 30 s",
	opts: []option{
		durOpt("disconnectedRetryTimeout", 15*time.Second, time.Millisecond, day),
		durOpt("suspendedRetryTimeout", 30*time.Second, time.Millisecond, day),
		durOpt("connectionStateTtl", 120*time.Second, time.Millisecond, day),
	},
	limit: noLimit,
	next: func(l *Library, d retryDraws, c Conn) Decision {
		ttl, susp := l.dur("connectionStateTtl"), l.dur("suspendedRetryTimeout")
		switch {
		case d.attempt == 1 && c.Dropped:
			return Decision{}
		case c.SinceDrop >= ttl:
			return Decision{Delay: susp}
		}
		coef := min(float64(d.attempt+2)/3, 2)
		w := fromMS(l.ms("disconnectedRetryTimeout") * coef * (1 - d.u(0)*0.2))
		if c.SinceDrop+w > ttl {
			// The suspend timer fires first and starts the suspended retry.
			w = ttl - c.SinceDrop + susp
		}
		return Decision{Delay: w}
	},
}

// mqtt (mqtt.js): _setupReconnect's setInterval(reconnectPeriod). Each
// attempt's connect() clears that interval (_clearReconnect), and the
// attempt's close sets a new one up, so the wait counts from each close the
// client saw: the interval never fires twice.
var mqttJS = &preset{
	name:   "mqttjs",
	source: Source{"mqtt", "5.16.0", "build/lib/client.js (_setupReconnect, connect, _clearReconnect)"},
	rule:   "reconnectPeriod (1 s) after each close, the drop's or a failed attempt's: no backoff, no jitter, unlimited",
	opts:   []option{durOpt("reconnectPeriod", time.Second, time.Millisecond, day)},
	limit:  noLimit,
	next: func(l *Library, _ retryDraws, _ Conn) Decision {
		return Decision{Delay: l.dur("reconnectPeriod")}
	},
}

// paho-mqtt: ClientImpl._reconnect and _disconnected, with reconnect: true.
var paho = &preset{
	name:   "paho",
	source: Source{"paho-mqtt", "1.1.0", "paho-mqtt.js (_reconnect, _disconnected)"},
	rule:   "reconnect: true (opt-in): at once, then 2, 4, … 128 s",
	limit:  noLimit,
	next: func(_ *Library, d retryDraws, _ Conn) Decision {
		if d.attempt == 1 {
			return Decision{}
		}
		return Decision{Delay: time.Duration(min(1<<min(d.attempt-1, 8), 128)) * time.Second}
	},
}

// nats (nats.js core): ProtocolHandler.dodialLoop with the default
// reconnectDelayHandler. The loop retryDraws a new wait each time it wakes and
// dials once lastConnect + wait has passed.
var nats = &preset{
	name:   "nats",
	source: Source{"@nats-io/nats-core", "3.4.0", "lib/protocol.js (dodialLoop), lib/options.js"},
	rule:   "dial once 2 s + floor(r·101) ms have passed since the last attempt began (a new draw each time the loop wakes; 1 s jitter with TLS), so at once after a long connection; gives up after 10 attempts",
	opts: []option{
		durOpt("reconnectTimeWait", 2*time.Second, 0, day),
		durOpt("reconnectJitter", 100*time.Millisecond, 0, day),
		durOpt("reconnectJitterTLS", time.Second, 0, day),
		enumOpt("tls", "false", "true"),
		intOpt("maxReconnectAttempts", 10, -1, math.MaxInt32),
	},
	limit: func(l *Library) int {
		switch n := int(l.value("maxReconnectAttempts")); {
		case n == -1:
			return 0
		case n <= 0:
			return 1 // removed from the pool after its first failure
		default:
			return n
		}
	},
	next: func(l *Library, d retryDraws, c Conn) Decision {
		jit := l.ms("reconnectJitter")
		if l.value("tls") == 1 {
			jit = l.ms("reconnectJitterTLS")
		}
		elapsed := float64(c.SinceAttempt) / float64(time.Millisecond)
		t := elapsed
		for k := 0; k < 64; k++ {
			extra := 0.0
			if jit > 0 {
				extra = math.Floor(d.u(k) * (jit + 1))
			}
			w := l.ms("reconnectTimeWait") + extra
			if w <= t {
				break
			}
			t = w
		}
		return Decision{Delay: fromMS(t - elapsed)}
	},
}

// gRPC (grpc-go): internal/backoff Exponential.Backoff with
// backoff.DefaultConfig, as addrConn.resetTransportAndUnlock uses it.
var grpcGo = &preset{
	name:   "grpc",
	source: Source{"google.golang.org/grpc", "v1.83.2", "internal/backoff/backoff.go, backoff/backoff.go, clientconn.go"},
	rule:   "at once after a drop; then after failed attempt k: 1 s for the first, then 1 s·1.6^k up to 120 s, ±20 %",
	opts: []option{
		durOpt("baseDelay", time.Second, time.Millisecond, day),
		numOpt("multiplier", 1.6, 1, 1000),
		numOpt("jitter", 0.2, 0, 1),
		durOpt("maxDelay", 120*time.Second, time.Millisecond, day),
	},
	limit: noLimit,
	next: func(l *Library, d retryDraws, c Conn) Decision {
		if d.attempt == 1 && c.Dropped {
			return Decision{}
		}
		retries := d.attempt - 2
		if d.attempt == 1 {
			retries = 0
		}
		base := float64(l.dur("baseDelay"))
		if retries == 0 {
			return Decision{Delay: time.Duration(base)}
		}
		b, hi := base, float64(l.dur("maxDelay"))
		for ; b < hi && retries > 0; retries-- {
			b *= l.value("multiplier")
		}
		b = min(b, hi) * (1 + l.value("jitter")*(d.u(0)*2-1))
		return Decision{Delay: saturate(b)}
	},
}

// @stomp/stompjs: Client.scheduleReconnect.
var stompJS = &preset{
	name:   "stompjs",
	source: Source{"@stomp/stompjs", "7.5.0", "esm6/client.js (scheduleReconnect)"},
	rule:   "reconnectDelay (5 s) fixed; reconnectTimeMode=exponential doubles it per attempt up to maxReconnectDelay (15 min)",
	opts: []option{
		durOpt("reconnectDelay", 5*time.Second, time.Millisecond, day),
		enumOpt("reconnectTimeMode", "linear", "exponential"),
		durOpt("maxReconnectDelay", 15*time.Minute, 0, day),
	},
	limit: noLimit,
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		rd := l.dur("reconnectDelay")
		if l.value("reconnectTimeMode") == 0 {
			return Decision{Delay: rd}
		}
		v := float64(rd) * math.Pow(2, float64(d.attempt-1))
		if hi := l.dur("maxReconnectDelay"); hi != 0 {
			v = min(v, float64(max(hi, rd)))
		}
		return Decision{Delay: saturate(v)}
	},
}

// sgcWebSockets WatchDog: the component's options as the seed describes
// them; its source is not published.
var sgcWebSockets = &preset{
	name:   "sgcwebsockets",
	source: Source{"sgcWebSockets", "2026.7", "TsgcWebSocketClient.WatchDog (the seed's description; source not published)"},
	rule:   "Interval s fixed (Backoff=fixed); exponential multiplies by BackoffMultiplier per attempt up to MaxInterval (0 = none); Jitter adds up to that fraction; Attempts 0 = forever",
	opts: []option{
		{name: "Interval", kind: optSecs, def: 10, min: 0.001, max: 86400},
		enumOpt("Backoff", "fixed", "exponential"),
		numOpt("BackoffMultiplier", 2, 1, 1000),
		{name: "MaxInterval", kind: optSecs, def: 0, min: 0, max: 86400},
		numOpt("Jitter", 0, 0, 1),
		intOpt("Attempts", 0, 0, math.MaxInt32),
	},
	limit: intLimit("Attempts"),
	next: func(l *Library, d retryDraws, _ Conn) Decision {
		v := float64(l.dur("Interval"))
		if l.value("Backoff") == 1 {
			v *= math.Pow(l.value("BackoffMultiplier"), float64(d.attempt-1))
			if hi := float64(l.dur("MaxInterval")); hi > 0 {
				v = min(v, hi)
			}
		}
		if j := l.value("Jitter"); j > 0 {
			v *= 1 + j*d.u(0)
		}
		return Decision{Delay: saturate(v)}
	},
}
