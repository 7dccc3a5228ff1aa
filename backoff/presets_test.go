package backoff

import (
	"strings"
	"testing"
	"time"
)

// TestPresetRules pins each library rule on worked examples with fixed
// draws, the values computed by hand from the library's source.
func TestPresetRules(t *testing.T) {
	drop := Conn{Dropped: true, Up: time.Hour, SinceAttempt: time.Hour}
	refused := Conn{}
	type tc struct {
		spec    string
		attempt int
		c       Conn
		u       []float64 // draws u(0), u(1), ...; the last is also the process draw
		want    Decision
	}
	stop := Decision{Stop: Exhausted}
	for _, tc := range []tc{
		// socket.io: floor(10r) even subtracts, odd adds; the cap comes last.
		{"socketio", 1, drop, []float64{0.25}, Decision{Delay: 875 * ms}},
		{"socketio", 2, refused, []float64{0.35}, Decision{Delay: 2350 * ms}},
		{"socketio", 3, refused, []float64{0.95}, Decision{Delay: 5 * s}},
		{"socketio", 4, refused, []float64{0.8}, Decision{Delay: 4800 * ms}},
		{"socketio", 5, refused, []float64{0.05}, Decision{Delay: 5 * s}},
		{"socketio:randomizationFactor=0", 2, refused, []float64{0.35}, Decision{Delay: 2 * s}},
		{"socketio:reconnectionAttempts=3", 4, refused, []float64{0.5}, stop},
		{"socketio:reconnectionDelay=2s,reconnectionDelayMax=10s,randomizationFactor=0.3", 2, refused, []float64{0.5}, Decision{Delay: 4600 * ms}},
		// signalr: the list, then it gives up.
		{"signalr", 1, drop, nil, Decision{}},
		{"signalr", 4, refused, nil, Decision{Delay: 30 * s}},
		{"signalr", 5, refused, nil, stop},
		{"signalr:delays=0s|5s|20s", 3, refused, nil, Decision{Delay: 20 * s}},
		{"signalr:delays=0s|5s|20s", 4, refused, nil, stop},
		// phoenix: the list, then 5 s; a 0 entry is the fallback too.
		{"phoenix", 1, drop, nil, Decision{Delay: 10 * ms}},
		{"phoenix", 9, refused, nil, Decision{Delay: 2 * s}},
		{"phoenix", 10, refused, nil, Decision{Delay: 5 * s}},
		{"phoenix:reconnectAfterMs=1s|0s,reconnectAfterMsElse=3s", 2, refused, nil, Decision{Delay: 3 * s}},
		// centrifuge: min(max, min + floor(r·(min(max, min·2^(n−1)) + 1))).
		{"centrifuge", 1, drop, []float64{0.5}, Decision{Delay: 750 * ms}},
		{"centrifuge", 3, refused, []float64{0.999}, Decision{Delay: 2498 * ms}},
		{"centrifuge", 7, refused, []float64{0.9}, Decision{Delay: 18500 * ms}},
		{"centrifuge", 8, refused, []float64{0.99}, Decision{Delay: 20 * s}},
		// graphql-ws: 2^(n−1) s + [300, 3000) ms, 5 retries, fatal codes.
		{"graphql-ws", 1, drop, []float64{0}, Decision{Delay: 1300 * ms}},
		{"graphql-ws", 5, drop, []float64{0.5}, Decision{Delay: 17650 * ms}},
		{"graphql-ws", 6, drop, []float64{0.5}, stop},
		// An attempt that failed to open ends the client.
		{"graphql-ws", 2, refused, []float64{0.5}, stop},
		{"graphql-ws", 1, Conn{Dropped: true, Close: 4400}, []float64{0.5}, Decision{Stop: Refused}},
		{"graphql-ws", 1, Conn{Dropped: true, Close: 1002}, []float64{0.5}, Decision{Stop: Refused}},
		{"graphql-ws", 1, Conn{Dropped: true, Close: 1012}, []float64{0.5}, Decision{Delay: 2650 * ms}},
		{"graphql-ws", 1, Conn{Dropped: true, Close: 1000}, []float64{0.5}, Decision{}},
		{"graphql-ws:retryAttempts=0", 1, drop, []float64{0.5}, stop},
		// reconnecting-websocket: the process draw 0.5 makes minDelay 3 s.
		{"reconnecting-websocket", 1, drop, []float64{0.5}, Decision{Delay: 3 * s}},
		{"reconnecting-websocket", 3, refused, []float64{0.5}, Decision{Delay: 5070 * ms}},
		{"reconnecting-websocket", 6, refused, []float64{0.5}, Decision{Delay: 10 * s}},
		{"reconnecting-websocket:minReconnectionDelay=1s", 2, refused, []float64{0.5}, Decision{Delay: 1300 * ms}},
		{"reconnecting-websocket:maxRetries=2", 3, refused, []float64{0.5}, stop},
		// actioncable: the first poll's jitter is up to 100 %, later 15 %.
		{"actioncable", 1, drop, []float64{0.5}, Decision{Delay: 9 * s}},
		// pusher: close codes decide the first retry; then the strategy's timeouts.
		{"pusher", 1, drop, nil, Decision{Delay: s}},
		{"pusher", 1, Conn{Dropped: true, Close: 4000}, nil, Decision{}},
		{"pusher", 1, Conn{Dropped: true, Close: 4050}, nil, Decision{Stop: Refused}},
		{"pusher", 1, Conn{Dropped: true, Close: 4100}, nil, Decision{Delay: s}},
		{"pusher", 1, Conn{Dropped: true, Close: 4200}, nil, Decision{}},
		{"pusher", 1, Conn{Dropped: true, Close: 4300}, nil, Decision{Stop: Refused}},
		{"pusher", 2, Conn{SinceAttempt: 10 * ms}, nil, Decision{Delay: 14990 * ms}},
		{"pusher", 3, refused, nil, Decision{Delay: 30 * s}},
		{"pusher", 9, refused, nil, Decision{Delay: 60 * s}},
		// ably: at once, then 15 s·min((n+2)/3, 2)·(1 − 0.2r), suspended at 120 s.
		{"ably", 1, drop, []float64{0.5}, Decision{}},
		{"ably", 2, refused, []float64{0.5}, Decision{Delay: 18 * s}},
		{"ably", 4, refused, []float64{0}, Decision{Delay: 30 * s}},
		{"ably", 3, Conn{SinceDrop: 110 * s}, []float64{0}, Decision{Delay: 40 * s}},
		{"ably", 7, Conn{SinceDrop: 120 * s}, []float64{0}, Decision{Delay: 30 * s}},
		// mqtt.js: 1 s after each close.
		{"mqttjs", 1, drop, nil, Decision{Delay: s}},
		// connect() clears the interval; the failed attempt's close sets
		// a new one: 1 s from that close, however long the attempt took.
		{"mqttjs", 2, Conn{SinceAttempt: 30 * ms}, nil, Decision{Delay: s}},
		{"mqttjs", 3, Conn{SinceAttempt: 2500 * ms}, nil, Decision{Delay: s}},
		// paho: at once, then 2, 4, ... 128 s.
		{"paho", 1, drop, nil, Decision{}},
		{"paho", 2, refused, nil, Decision{Delay: 2 * s}},
		{"paho", 8, refused, nil, Decision{Delay: 128 * s}},
		{"paho", 20, refused, nil, Decision{Delay: 128 * s}},
		// nats: counted from the last attempt; the loop draws again each time it wakes.
		{"nats", 1, drop, []float64{0.5}, Decision{}},
		{"nats", 2, Conn{SinceAttempt: 5 * ms}, []float64{0.5, 0.2}, Decision{Delay: 2045 * ms}},
		{"nats", 2, refused, []float64{0.2, 0.5, 0.1}, Decision{Delay: 2050 * ms}},
		{"nats", 11, refused, []float64{0.5}, stop},
		{"nats:maxReconnectAttempts=-1", 100, refused, []float64{0.5, 0}, Decision{Delay: 2050 * ms}},
		{"nats:tls=true", 2, refused, []float64{0.5, 0}, Decision{Delay: 2500 * ms}},
		// grpc: at once, then 1 s unjittered, then ×1.6 ±20 %.
		{"grpc", 1, drop, []float64{0.5}, Decision{}},
		{"grpc", 1, refused, []float64{0.5}, Decision{Delay: s}},
		{"grpc", 2, refused, []float64{0.5}, Decision{Delay: s}},
		{"grpc", 3, refused, []float64{0.5}, Decision{Delay: 1600 * ms}},
		{"grpc", 30, refused, []float64{0.75}, Decision{Delay: 132 * s}},
		// stompjs: fixed 5 s; exponential doubles up to maxReconnectDelay.
		{"stompjs", 3, refused, nil, Decision{Delay: 5 * s}},
		{"stompjs:reconnectDelay=1s,reconnectTimeMode=exponential", 3, refused, nil, Decision{Delay: 4 * s}},
		{"stompjs:reconnectDelay=1s,reconnectTimeMode=exponential,maxReconnectDelay=3s", 3, refused, nil, Decision{Delay: 3 * s}},
		// sgcWebSockets: fixed Interval; the exponential example.
		{"sgcwebsockets", 5, refused, []float64{0.5}, Decision{Delay: 10 * s}},
		{"sgcwebsockets:Interval=2,Backoff=exponential,BackoffMultiplier=1.5,MaxInterval=120,Jitter=0.5", 3, refused, []float64{0.5}, Decision{Delay: 5625 * ms}},
		{"sgcwebsockets:Interval=2,Backoff=exponential,BackoffMultiplier=1.5,MaxInterval=120,Jitter=0.5", 20, refused, []float64{0}, Decision{Delay: 120 * s}},
		{"sgcwebsockets:Attempts=3", 4, refused, nil, stop},
	} {
		p := MustParse(tc.spec)
		got := p.Library.next(retryDraws{attempt: tc.attempt, fixed: append(tc.u, 0.5)[:max(len(tc.u), 1)]}, tc.c)
		if got != tc.want {
			t.Errorf("%s attempt %d %+v: got %+v, want %+v", tc.spec, tc.attempt, tc.c, got, tc.want)
		}
	}
}

// TestPresetSpecs checks that every preset's spec parses back to itself,
// with and without options, and that errors name the option.
func TestPresetSpecs(t *testing.T) {
	for _, name := range Presets() {
		p := MustParse(name)
		if p.String() != name || MustParse(p.String()) != p {
			t.Errorf("%s: canonical form %q", name, p.String())
		}
		if src, ok := p.Source(); !ok || src.Version == "" || src.File == "" {
			t.Errorf("%s: source %+v", name, src)
		}
	}
	for _, spec := range []string{
		"socketio:reconnectionDelay=2s,reconnectionDelayMax=10s,randomizationFactor=0.3",
		"signalr:delays=0s|5s|20s",
		"sgcwebsockets:Interval=2,Backoff=exponential,BackoffMultiplier=1.5,MaxInterval=120,Jitter=0.5",
		"reconnecting-websocket:minUptime=1s,clientsPerProcess=100",
		"nats:tls=true,maxReconnectAttempts=-1",
	} {
		p := MustParse(spec)
		if p.String() != spec || MustParse(p.String()) != p {
			t.Errorf("%s: canonical form %q", spec, p.String())
		}
	}
	if got := MustParse("socketio: randomizationFactor=0.3 , reconnectionDelay=2000ms").String(); got != "socketio:reconnectionDelay=2s,randomizationFactor=0.3" {
		t.Errorf("canonical order: %q", got)
	}
	for spec, want := range map[string]string{
		"socketio:jitter=0.5":                                  `unknown option "jitter" of socketio`,
		"socketio:randomizationFactor=2":                       "randomizationFactor: must be within 0..1",
		"signalr:delays=1s|x":                                  "delays:",
		"stompjs:reconnectTimeMode=quadratic":                  "want one of linear, exponential",
		"paho:reconnect=true":                                  "want one of none",
		"centrifuge:minReconnectDelay=1s,minReconnectDelay=2s": "given twice",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", spec, err, want)
		}
	}
}

// TestPresetPreview pins what `stampede policy` prints for two presets, as
// the docs quote it.
func TestPresetPreview(t *testing.T) {
	got := MustParse("signalr").Schedule(1, 0, 6).Delays
	want := []time.Duration{0, 2 * s, 10 * s, 30 * s}
	if len(got) != len(want) || got[3] != want[3] || got[1] != want[1] {
		t.Errorf("signalr: %v, want %v", got, want)
	}
	ph := MustParse("phoenix").Delays(1, 0, 11)
	if ph[0] != 10*ms || ph[8] != 2*s || ph[9] != 5*s || ph[10] != 5*s {
		t.Errorf("phoenix: %v", ph)
	}
	if d := MustParse("phoenix").Delay(1, 0, 10); d != 5*s {
		t.Errorf("phoenix Delay(10) = %v", d)
	}
}

// TestPresetResets: reconnecting-websocket keeps its count through a
// connection shorter than minUptime; the others reset on every connect.
func TestPresetResets(t *testing.T) {
	rws := MustParse("reconnecting-websocket")
	if rws.Resets(4999*ms) || !rws.Resets(5*s) {
		t.Error("reconnecting-websocket: the count must reset only after 5 s up")
	}
	if !MustParse("socketio").Resets(0) || !MustParse("exp").Resets(0) {
		t.Error("socketio and exp reset on every connect")
	}
}

// TestPresetProcessDraws: clients of one process share reconnecting-
// websocket's module-load draw; clients of different processes do not.
func TestPresetProcessDraws(t *testing.T) {
	shared := MustParse("reconnecting-websocket:clientsPerProcess=10")
	if a, b := shared.Delay(7, 0, 1), shared.Delay(7, 9, 1); a != b {
		t.Errorf("clients 0 and 9 of one process: %v and %v", a, b)
	}
	own := MustParse("reconnecting-websocket")
	if a, b := own.Delay(7, 0, 1), own.Delay(7, 9, 1); a == b {
		t.Errorf("clients 0 and 9 of their own processes drew the same %v", a)
	}
}
