package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/internal/procgroup"
)

// PerProcess is how many links one proxy process is given: each link
// is two open files (client and upstream socket), and one process may hold
// at most 20,000, so 7,500 links leave room for the process's own files
// and for links in transition during a reconnect herd.
const PerProcess = 7500

// ProcsFor returns how many proxy processes relay conns connections.
func ProcsFor(conns int) int { return max(1, (conns+PerProcess-1)/PerProcess) }

// Spawner starts one process of a Group relaying with cfg and
// returns it once its ready line (a childproc.ReadyLine) came, waiting at most
// timeout. The process gets cfg as a typed plan, never as flags:
// agent.SpawnRelay is the one the stampede binary uses (docs/agent.md).
type Spawner func(ctx context.Context, cfg Config, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error)

// GroupConfig configures a group of fault proxy processes.
type GroupConfig struct {
	// Spawn starts one process. Required.
	Spawn Spawner
	// Procs is the number of processes. Default 1.
	Procs int
	// Proxy is every process's configuration. Its Listen
	// is the group's address (port 0: the first process picks a port and
	// the others join it); Proc is set per process.
	Proxy Config
	// SourceIPs, when set, give process i the upstream source address
	// SourceIPs[i % len], each with its own ephemeral port range.
	SourceIPs []netip.Addr
	// ReadyTimeout bounds the wait for a process's ready line. Default 10 s.
	ReadyTimeout time.Duration
	// Log, if set, is told when Set could not reach a process.
	Log func(format string, args ...any)
	// OnExit, if set, is called once for every process that exits before
	// Close: a crash, or a kill from outside. err is its exit error.
	OnExit func(pid int, err error)
}

// Group is a set of `stampede proxy` processes sharing one port as an
// SO_REUSEPORT group, since one process may hold at most 20,000 open files
// and each relayed connection takes two. It implements supervisor.Proxy: Set reaches
// every process through its control API.
type Group struct {
	cfg    GroupConfig
	addr   string
	procs  []*procgroup.Member
	client *http.Client
	once   sync.Once
}

// StartGroup starts cfg.Procs proxy processes and returns when every
// one printed its ready line. On error every process started is stopped.
func StartGroup(ctx context.Context, cfg GroupConfig) (*Group, error) {
	if cfg.Spawn == nil {
		return nil, errors.New("proxy group: Spawn is required")
	}
	if cfg.Procs < 0 || cfg.ReadyTimeout < 0 {
		return nil, errors.New("proxy group: Procs and ReadyTimeout must not be negative")
	}
	if err := cfg.Proxy.Validate(); err != nil {
		return nil, err
	}
	cfg.Procs = max(cfg.Procs, 1)
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	g := &Group{cfg: cfg, client: &http.Client{Timeout: 5 * time.Second}}
	listen := cfg.Proxy.Listen
	if listen == "" {
		listen = DefaultListen
	}
	// The first process settles the port; the others join it at once.
	for i := 0; i < cfg.Procs; i++ {
		pc := cfg.Proxy
		pc.Listen, pc.Proc = listen, i
		if len(cfg.SourceIPs) > 0 {
			pc.SourceIP = cfg.SourceIPs[i%len(cfg.SourceIPs)]
		}
		p, err := g.start(ctx, pc)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.procs = append(g.procs, p)
		if i == 0 {
			listen, g.addr = p.Line.Addr, p.Line.Addr
		}
	}
	return g, nil
}

// start runs one process and waits for its ready line.
func (g *Group) start(ctx context.Context, pc Config) (*procgroup.Member, error) {
	if pc.ControlToken == "" {
		pc.ControlToken = controlapi.NewToken()
	}
	m, err := procgroup.Start(func() (*childproc.Child, childproc.ReadyLine, error) {
		return g.cfg.Spawn(ctx, pc, g.cfg.ReadyTimeout)
	}, pc.ControlToken)
	if err == nil && g.cfg.OnExit != nil {
		m.Watch(func(err error) { g.cfg.OnExit(m.PID(), err) })
	}
	return m, err
}

// Addr returns the group's listen address, "IP:port".
func (g *Group) Addr() string { return g.addr }

// URLFor returns rawURL (a ws:// or wss:// URL of the upstream) with its
// host:port replaced by the group's address, so clients go through the
// proxy; it returns rawURL unchanged when it does not parse.
func (g *Group) URLFor(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = g.addr
	return u.String()
}

// PIDs returns the process ids of the group's running processes.
func (g *Group) PIDs() []int32 {
	var out []int32
	for _, p := range g.procs {
		if !p.Exited() {
			out = append(out, int32(p.PID()))
		}
	}
	return out
}

// Children returns the ready line of each process: the group's address,
// the process id, its control API address and token.
func (g *Group) Children() []childproc.ReadyLine {
	out := make([]childproc.ReadyLine, 0, len(g.procs))
	for _, p := range g.procs {
		out = append(out, childproc.ReadyLine{Ready: true, Addr: g.addr, PID: p.PID(), Control: p.Line.Control, Token: p.Line.Token})
	}
	return out
}

// Set switches the fault set f on in every process (the zero set: all
// off), giving up on a process after 5 s; failures go to cfg.Log.
func (g *Group) Set(f fault.Set) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Apply(ctx, f); err != nil && g.cfg.Log != nil {
		g.cfg.Log("proxy: %v", err)
	}
}

// Apply switches the fault set f on in every process at once and returns
// when all have answered.
func (g *Group) Apply(ctx context.Context, f fault.Set) error {
	q := url.Values{}
	if w := f.Words(); w != "" {
		q.Set("set", w)
	}
	return g.each(func(p *procgroup.Member) error {
		resp, err := g.call(ctx, p, http.MethodPost, "/fault?"+q.Encode(), http.StatusNoContent)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}

// call sends one request to a process's control API, with its token, and
// returns the response when its status is want (the caller closes its
// body), else an error naming the process and what it answered.
func (g *Group) call(ctx context.Context, p *procgroup.Member, method, path string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.Line.Control+path, nil)
	if err != nil {
		return nil, err
	}
	controlapi.SetToken(req, p.Line.Token)
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", p.PID(), err)
	}
	if resp.StatusCode != want {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("process %d: %s %s: %s: %s", p.PID(), method, path, resp.Status, msg)
	}
	return resp, nil
}

// Stats returns the counters of every process, summed.
func (g *Group) Stats(ctx context.Context) (Stats, error) {
	var mu sync.Mutex
	var sum Stats
	err := g.each(func(p *procgroup.Member) error {
		resp, err := g.call(ctx, p, http.MethodGet, "/stats", http.StatusOK)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var st Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return fmt.Errorf("process %d: stats: %w", p.PID(), err)
		}
		mu.Lock()
		sum.add(&st)
		sum.Fault = st.Fault
		mu.Unlock()
		return nil
	})
	return sum, err
}

// each runs f for every process concurrently and joins the errors.
func (g *Group) each(f func(p *procgroup.Member) error) error { return procgroup.Each(g.procs, f) }

// Close stops every process (SIGTERM, then SIGKILL after 2 s) and waits
// for them.
func (g *Group) Close() error {
	g.once.Do(func() { procgroup.StopAll(g.procs, syscall.SIGTERM, 2*time.Second) })
	return nil
}
