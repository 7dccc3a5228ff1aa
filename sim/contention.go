package sim

import (
	"container/heap"
	"fmt"
	"math"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// The contention workload of the AWS Architecture Blog study "Exponential
// Backoff And Jitter" (Marc Brooker, 2015) and its simulator: N clients
// each write one row once, by optimistic concurrency: read the row's
// version, write with that version; a write with a stale version fails and
// the client backs off, then reads again. Every message takes a network
// delay |Normal(10 ms, 2 ms)|; the backoff base is 5 ms and the cap 2 s.
// The study reports, per policy and fleet size, the calls the server
// handled (writes, failed ones included) and the time until the last
// client succeeded, each the mean of 100 runs.
//
// The policies come from package backoff. The study's exponential delay
// before retry n is min(cap, base*2^n), so its first retry waits 2*base:
// Exp, Full and Equal take Initial = 2*base; decorrelated draws
// min(cap, U(base, 3*previous)) from base, backoff's Decorrelated with
// Initial = base. "none" retries at once.

// ContentionBase and ContentionCap are the study's backoff base and cap.
const (
	ContentionBase = 5 * time.Millisecond
	ContentionCap  = 2 * time.Second
)

// ContentionPolicy is one of the study's policies.
type ContentionPolicy struct {
	// Name is the study's name: none, exponential, full, equal,
	// decorrelated.
	Name string
	// Policy is the backoff policy; ignored for none.
	Policy backoff.Policy
	// None retries at once.
	None bool
}

// ContentionPolicies returns the study's five policies, built from the
// backoff package, in the study's order of presentation.
func ContentionPolicies() []ContentionPolicy {
	two := 2 * ContentionBase
	return []ContentionPolicy{
		{Name: "none", None: true},
		{Name: "exponential", Policy: backoff.Policy{Kind: backoff.Exp, Initial: two, Max: ContentionCap}},
		{Name: "decorrelated", Policy: backoff.Policy{Kind: backoff.Decorrelated, Initial: ContentionBase, Max: ContentionCap}},
		{Name: "equal", Policy: backoff.Policy{Kind: backoff.Equal, Initial: two, Max: ContentionCap}},
		{Name: "full", Policy: backoff.Policy{Kind: backoff.Full, Initial: two, Max: ContentionCap}},
	}
}

// ContentionReference is the study's figures at 100 clients:
// calls and completion time in ms.
var ContentionReference = map[string][2]float64{
	"none":         {2429, 2032},
	"exponential":  {1857, 63432},
	"decorrelated": {1004, 4630},
	"equal":        {811, 6512},
	"full":         {795, 4914},
}

// ContentionResult is one policy at one fleet size, averaged over trials.
type ContentionResult struct {
	Clients int
	Policy  string
	// Calls is the mean number of writes the server handled.
	Calls float64
	// TimeMS is the mean time, in ms, until the last client's write
	// succeeded and its answer arrived.
	TimeMS float64
}

// Streams of the contention model's draws.
const (
	streamNet   backoff.Stream = 1<<32 + 3 // per message: the network delay
	streamTrial backoff.Stream = 1<<32 + 4 // per trial: its seed
)

// Contention runs the study's workload for clients clients, trials times,
// with policy p and the given seed, and returns the means.
func Contention(p ContentionPolicy, clients, trials int, seed uint64) (ContentionResult, error) {
	if clients <= 0 || trials <= 0 {
		return ContentionResult{}, fmt.Errorf("sim: contention needs clients and trials, got %d and %d", clients, trials)
	}
	if !p.None {
		if err := p.Policy.Validate(); err != nil {
			return ContentionResult{}, err
		}
	}
	var calls, total float64
	for t := range trials {
		c, end := contentionTrial(p, clients, backoff.Hash(seed, streamTrial, uint64(t), 0))
		calls += float64(c)
		total += end
	}
	return ContentionResult{Clients: clients, Policy: p.Name, Calls: calls / float64(trials), TimeMS: total / float64(trials)}, nil
}

// occMsg is one message in flight, at ms, to the server (read or write)
// or back to a client (its answer).
type occMsg struct {
	at      float64
	seq     uint64 // order of sending: ties go first-sent first
	client  int
	kind    uint8 // occRead, occWrite: to the server; occVersion, occResult: to the client
	version int
	ok      bool
}

const (
	occRead = iota
	occWrite
	occVersion
	occResult
)

type occQueue []occMsg

func (q occQueue) Len() int { return len(q) }
func (q occQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q occQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *occQueue) Push(x any)   { *q = append(*q, x.(occMsg)) }
func (q *occQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// contentionTrial runs one trial: the server's calls and the instant, in
// ms, of the last message.
func contentionTrial(p ContentionPolicy, clients int, seed uint64) (calls int, end float64) {
	var q occQueue
	var seq uint64
	msgs := make([]uint64, clients)  // messages each client has sent: its draw counter
	attempts := make([]int, clients) // failed writes of each client
	net := func(c int) float64 {
		msgs[c]++
		// Box-Muller from two draws: |Normal(10, 2)| ms.
		u1 := backoff.U(seed, streamNet, uint64(c), 2*msgs[c])
		u2 := backoff.U(seed, streamNet, uint64(c), 2*msgs[c]+1)
		z := math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
		return math.Abs(10 + 2*z)
	}
	send := func(m occMsg) {
		seq++
		m.seq = seq
		heap.Push(&q, m)
	}
	for c := range clients {
		send(occMsg{at: net(c), client: c, kind: occRead})
	}
	version := 0
	for q.Len() > 0 {
		m := heap.Pop(&q).(occMsg)
		end = m.at
		c := m.client
		switch m.kind {
		case occRead:
			send(occMsg{at: m.at + net(c), client: c, kind: occVersion, version: version})
		case occWrite:
			calls++
			ok := m.version == version
			if ok {
				version++
			}
			send(occMsg{at: m.at + net(c), client: c, kind: occResult, ok: ok})
		case occVersion:
			send(occMsg{at: m.at + net(c), client: c, kind: occWrite, version: m.version})
		case occResult:
			if m.ok {
				continue
			}
			attempts[c]++
			var wait float64
			if !p.None {
				wait = float64(p.Policy.Delay(seed, uint64(c), attempts[c])) / float64(time.Millisecond)
			}
			send(occMsg{at: m.at + net(c) + wait, client: c, kind: occRead})
		}
	}
	return calls, end
}
