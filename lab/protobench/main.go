// Command protobench measures the message protocol's throughput and
// latency on the bundled target with a durable store (docs/protocol.md):
//
//	go -C lab run ./protobench [-rooms 20] [-room-size 10] [-duration 10s] [-rate 4000] [-store URL]
//
// It starts a target process on the store (default: the embedded store in a
// fresh temporary directory, fsync before every ACK) by running itself as
// `stampede target` would (group.Run), connects
// rooms x room-size WebSocket clients that each join one room, and runs two
// phases:
//
//  1. saturation: every client keeps up to -window messages un-ACKed, as
//     fast as the server ACKs them; prints ACKed messages/s.
//  2. paced: the clients together offer -rate messages/s, evenly spread;
//     prints the round trip from send to ACK (p50/p90/p99/max) and the
//     delivery rate to the other room members.
//  3. echo: the paced load again, against a plain echo target (no store,
//     no fan-out): a reference for what the machine's scheduling alone
//     does to a round trip at that moment (the machine is shared).
//
// Each phase prints its deliveries as a share of what the room members are
// owed (ACKed x (room-size - 1)) after a drain; anything under 100% is a
// bug. Exit status 1 when a target is missed: saturation >= -min-acked/s, or
// paced p99 >= -max-p99, or deliveries < 100%.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/group"
)

func main() {
	rooms := flag.Int("rooms", 20, "rooms")
	roomSize := flag.Int("room-size", 10, "clients per room")
	duration := flag.Duration("duration", 10*time.Second, "length of each phase")
	rate := flag.Float64("rate", 4000, "messages/s offered by all clients together in the paced phase")
	window := flag.Int("window", 16, "un-ACKed messages per client in the saturation phase")
	body := flag.Int("body", 64, "message body bytes")
	storeURL := flag.String("store", "", "store URL (default: embedded store in a temporary directory)")
	minAcked := flag.Float64("min-acked", 5000, "target: ACKed messages/s at saturation")
	maxP99 := flag.Duration("max-p99", 50*time.Millisecond, "target: send-to-ACK p99 in the paced phase")
	phases := flag.String("phases", "saturation,paced,echo", "phases to run, comma-separated (echo: the paced load against an echo target, for reference)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the phases to `FILE`")
	flag.Parse()

	url := *storeURL
	if url == "" {
		dir, err := os.MkdirTemp("", "protobench-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		url = "file://" + dir
	}
	srv, err := startTarget(url)
	if err != nil {
		fail(err)
	}
	defer srv.stop()

	n := *rooms * *roomSize
	fmt.Printf("protobench: %d rooms of %d (%d clients), store %s, body %d B, %s per phase; target pid %d, clients in this process\n",
		*rooms, *roomSize, n, url, *body, *duration, srv.pid)
	b := &bench{body: make([]byte, *body), roomSize: *roomSize, window: *window}
	for i := range b.body {
		b.body[i] = 'a' + byte(i%26)
	}
	for i := range n {
		c, err := b.dial(srv.url, i, "room-"+strconv.Itoa(i%*rooms))
		if err != nil {
			fail(err)
		}
		b.clients = append(b.clients, c)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ok := true
	var echoSrv *targetProc
	if strings.Contains(*phases, "saturation") {
		sat := b.phase("saturation", srv.pid, *duration, func(c *client, stop <-chan struct{}) { c.saturate(*window, stop) })
		ok = sat.print(fmt.Sprintf(">= %.0f ACKed/s", *minAcked), sat.ackedPerS() >= *minAcked) && ok
	}
	if strings.Contains(*phases, "paced") {
		paced := b.phase(fmt.Sprintf("paced %.0f/s", *rate), srv.pid, *duration, func(c *client, stop <-chan struct{}) {
			c.paced(time.Duration(float64(time.Second)*float64(n) / *rate), stop)
		})
		ok = paced.print("p99 < "+maxP99.String(), time.Duration(paced.rtt.ValueAtQuantile(99))*time.Microsecond < *maxP99) && ok
	}
	if strings.Contains(*phases, "echo") {
		// The same clients and rate against an echo target: what this
		// machine's scheduling alone does to a round trip right now.
		esrv, err := startTarget("")
		if err != nil {
			fail(err)
		}
		defer esrv.stop()
		echoSrv = esrv
		eb := &bench{body: b.body, roomSize: 1, window: *window}
		for i := range n {
			c, err := eb.dial(esrv.url, i, "room-"+strconv.Itoa(i%*rooms))
			if err != nil {
				fail(err)
			}
			eb.clients = append(eb.clients, c)
		}
		echo := eb.phase(fmt.Sprintf("echo %.0f/s", *rate), esrv.pid, *duration, func(c *client, stop <-chan struct{}) {
			c.paced(time.Duration(float64(time.Second)*float64(n) / *rate), stop)
		})
		echo.print("reference: no store, no fan-out", true)
	}
	st := srv.stats()
	fmt.Printf("target: msgs_acked %d, delivered %d, dup_suppressed %d\n", st.MsgsAcked, st.Delivered, st.DupSuppressed)
	if !ok {
		pprof.StopCPUProfile()
		srv.stop() // os.Exit skips the deferred stops
		if echoSrv != nil {
			echoSrv.stop()
		}
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "protobench:", err)
	os.Exit(2)
}

// bench is the set of clients.
type bench struct {
	clients  []*client
	body     []byte
	roomSize int
	window   int
}

// client is one connection: a writer (the phase's loop) and a reader.
type client struct {
	b    *bench
	i    int
	room string
	conn net.Conn
	wmu  sync.Mutex

	next    int            // next message number, writer-owned
	sent    []atomic.Int64 // send time (ns) by message number, ring
	credits chan struct{}  // saturation window

	mu        sync.Mutex
	rtt       *hdrhistogram.Histogram // µs
	acked     int64
	delivered int64
}

const ring = 1 << 12 // more than any client has un-ACKed

func (b *bench) dial(url string, i int, room string) (*client, error) {
	conn, br, _, err := ws.Dial(context.Background(), url)
	if err != nil {
		return nil, err
	}
	c := &client{b: b, i: i, room: room, conn: conn, sent: make([]atomic.Int64, ring),
		rtt: hdrhistogram.New(1, 60_000_000, 3), credits: make(chan struct{}, b.window)}
	if err := wsutil.WriteClientText(conn, protocol.AppendJoin(nil, room)); err != nil {
		return nil, err
	}
	var r io.Reader = conn
	if br != nil {
		r = io.MultiReader(br, conn)
	}
	rd := bufio.NewReaderSize(r, 64<<10)
	p, err := readFrame(rd, nil)
	var f protocol.Frame
	if err == nil {
		err = protocol.Decode(p, &f)
	}
	if err != nil || (f.Type != protocol.TypeJoined && f.Type != protocol.TypeJoin) { // join: an echo target
		return nil, fmt.Errorf("join %s: %v %s", room, err, p)
	}
	go c.read(rd)
	return c, nil
}

// readFrame reads one unfragmented server frame into buf.
func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return nil, err
	}
	if cap(buf) < int(h.Length) {
		buf = make([]byte, h.Length)
	}
	buf = buf[:h.Length]
	_, err = io.ReadFull(r, buf)
	return buf, err
}

// read counts ACKs (recording their round trip) and deliveries.
func (c *client) read(r *bufio.Reader) {
	var f protocol.Frame
	var buf []byte
	for {
		p, err := readFrame(r, buf)
		if err != nil {
			return
		}
		buf = p
		if protocol.Decode(p, &f) != nil {
			continue
		}
		switch f.Type {
		case protocol.TypeAck, protocol.TypeMsg: // msg: echoed by an echo target
			n := msgNumber(f.ID)
			rtt := (time.Now().UnixNano() - c.sent[n%ring].Load()) / 1000
			c.mu.Lock()
			c.acked++
			c.rtt.RecordValue(max(rtt, 1))
			c.mu.Unlock()
			select {
			case c.credits <- struct{}{}:
			default:
			}
		case protocol.TypeDeliver:
			c.mu.Lock()
			c.delivered++
			c.mu.Unlock()
		}
	}
}

// msgNumber parses the n of an ID "c<i>-<n>".
func msgNumber(id []byte) int {
	n := 0
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '-' {
			for _, d := range id[i+1:] {
				n = n*10 + int(d-'0')
			}
			break
		}
	}
	return n
}

// send writes the client's next message.
func (c *client) send(buf []byte) ([]byte, error) {
	n := c.next
	c.next++
	buf = protocol.AppendMsg(buf[:0], "c"+strconv.Itoa(c.i)+"-"+strconv.Itoa(n), c.room, c.b.body)
	c.sent[n%ring].Store(time.Now().UnixNano())
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return buf, wsutil.WriteClientText(c.conn, buf)
}

func (c *client) saturate(window int, stop <-chan struct{}) {
	for len(c.credits) < window {
		c.credits <- struct{}{}
	}
	var buf []byte
	var err error
	for {
		select {
		case <-stop:
			return
		case <-c.credits:
		}
		if buf, err = c.send(buf); err != nil {
			return
		}
	}
}

func (c *client) paced(interval time.Duration, stop <-chan struct{}) {
	// Spread the clients' phases evenly over one interval.
	offset := time.Duration(int64(interval) * int64(c.i) / int64(len(c.b.clients)))
	start := time.Now().Add(offset)
	var buf []byte
	var err error
	timer := time.NewTimer(time.Until(start))
	defer timer.Stop()
	for k := 1; ; k++ {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		timer.Reset(time.Until(start.Add(time.Duration(k) * interval)))
		if buf, err = c.send(buf); err != nil {
			return
		}
	}
}

// result is one phase's counts.
type result struct {
	name               string
	d                  time.Duration
	sent, acked, deliv int64
	owed               int64
	rtt                *hdrhistogram.Histogram
	cpu                float64 // CPU cores the clients (this process) used during the phase
	tcpu               float64 // CPU cores the target process used
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r result) ackedPerS() float64 { return float64(r.acked) / r.d.Seconds() }

// phase runs loop on every client for d, drains, and sums the counts.
func (b *bench) phase(name string, pid int, d time.Duration, loop func(*client, <-chan struct{})) result {
	for _, c := range b.clients {
		c.mu.Lock()
		c.acked, c.delivered = 0, 0
		c.rtt.Reset()
		c.mu.Unlock()
	}
	startNext := make([]int, len(b.clients))
	for i, c := range b.clients {
		startNext[i] = c.next
	}
	cpu0, tcpu0 := cpuTime(), procCPU(pid)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range b.clients {
		wg.Go(func() { loop(c, stop) })
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	r := result{name: name, d: d, rtt: hdrhistogram.New(1, 60_000_000, 3),
		cpu: (cpuTime() - cpu0).Seconds() / d.Seconds(), tcpu: (procCPU(pid) - tcpu0).Seconds() / d.Seconds()}
	for i, c := range b.clients {
		r.sent += int64(c.next - startNext[i])
	}
	// Drain: wait until every sent message is ACKed and delivered, or 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var acked, deliv int64
		for _, c := range b.clients {
			c.mu.Lock()
			acked += c.acked
			deliv += c.delivered
			c.mu.Unlock()
		}
		r.acked, r.deliv, r.owed = acked, deliv, acked*int64(b.roomSize-1)
		if (acked == r.sent && deliv >= r.owed) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range b.clients {
		c.mu.Lock()
		r.rtt.Merge(c.rtt)
		c.mu.Unlock()
	}
	return r
}

// print reports r and whether it met its target; it returns the verdict
// (deliveries must be complete too).
func (r result) print(target string, met bool) bool {
	q := func(p float64) string {
		return strconv.FormatFloat(float64(r.rtt.ValueAtQuantile(p))/1000, 'f', 1, 64)
	}
	share := 100.0
	if r.owed > 0 {
		share = math.Floor(1000*float64(r.deliv)/float64(r.owed)) / 10
	}
	verdict := "PASS"
	if !met || r.deliv < r.owed || r.acked != r.sent {
		verdict = "FAIL"
	}
	fmt.Printf("%-12s sent %d, ACKed %d (%.0f/s); send->ACK ms p50 %s p90 %s p99 %s max %s; delivered %d (%.0f/s, %.1f%% of owed); CPU cores: target %.2f, clients %.2f  [%s %s]\n",
		r.name+":", r.sent, r.acked, r.ackedPerS(), q(50), q(90), q(99), q(100),
		r.deliv, float64(r.deliv)/r.d.Seconds(), share, r.tcpu, r.cpu, target, verdict)
	return verdict == "PASS"
}

// targetEnv makes this program run as the target process (see startTarget):
// its value is the store URL, "echo" for none.
const targetEnv = "PROTOBENCH_TARGET_STORE"

func init() {
	if v, ok := os.LookupEnv(targetEnv); ok {
		cfg := target.Config{Server: spec.Server{Backlog: 4096}}
		if v != "echo" {
			cfg.Store = v
		}
		if err := group.Run(context.Background(), group.RunConfig{Server: cfg}); err != nil {
			fmt.Fprintln(os.Stderr, "protobench target:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// targetProc is a target process.
type targetProc struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	control string
	token   string
}

// startTarget runs this program as a target on storeURL ("" for an echo
// target) and waits for its ready line.
func startTarget(storeURL string) (*targetProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if storeURL == "" {
		storeURL = "echo"
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), targetEnv+"="+storeURL)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the bench
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	var rl childproc.ReadyLine
	if err == nil {
		err = json.Unmarshal(line, &rl)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("target process: no ready line: %v", err)
	}
	return &targetProc{cmd: cmd, pid: rl.PID, url: "ws://" + rl.Addr + "/", control: rl.Control, token: rl.Token}, nil
}

// stats fetches the target's counters from its control API.
func (t *targetProc) stats() target.Stats {
	var st target.Stats
	req, err := controlapi.NewRequest(context.Background(), "GET", "http://"+t.control+"/stats", t.token)
	if err != nil {
		return st
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
	}
	return st
}

func (t *targetProc) stop() {
	if t.cmd.ProcessState != nil {
		return
	}
	t.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.cmd.Process.Kill()
		<-done
	}
}

// procCPU is the user+system CPU time of process pid, from /proc.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th fields, in clock ticks (100 per second).
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
