package storm

import (
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster/hub"
)

// TestLimitsSize sizes runs against small injected limits: nothing here
// opens a socket, and a million clients are only arithmetic.
func TestLimitsSize(t *testing.T) {
	loop := netip.MustParseAddr("127.0.0.1")
	host := Limits{OpenFiles: 20000, EphemeralPorts: 28232, MemAvailable: 24 << 30}
	cases := []struct {
		name           string
		lim            Limits
		clients        int
		loadgen, tproc int
		ips            int // --source-ips given
		dst            netip.Addr
		want           Sizing // procs and len(SourceIPs) checked when err is empty
		err            []string
	}{
		// The million on this machine: 56 processes a side (18,000
		// each), 158 chosen source addresses (6,352 clients each, half of
		// the 12,704 one address may carry).
		{name: "a million here", lim: host, clients: 1000000, dst: loop,
			want: Sizing{LoadgenProcs: 56, TargetProcs: 56, PerProcess: 18000, PerSourceIP: 6352}},
		// A wider port range gives each address its cap of 20,000, and a
		// chosen address half of it.
		{name: "wide port range", lim: Limits{OpenFiles: 20000, EphemeralPorts: 55001}, clients: 250000, dst: loop,
			want: Sizing{LoadgenProcs: 14, TargetProcs: 14, PerProcess: 18000, PerSourceIP: 10000}},
		// Addresses the user gives may carry the whole 12,704 each.
		{name: "given addresses carry more", lim: host, clients: 25000, ips: 2, dst: loop,
			want: Sizing{LoadgenProcs: 2, TargetProcs: 2, PerProcess: 18000, PerSourceIP: 12704}},
		// One chosen address holds 6,352 clients: 6,353 take two.
		{name: "one address", lim: host, clients: 6352, dst: loop,
			want: Sizing{LoadgenProcs: 1, TargetProcs: 1, PerProcess: 18000, PerSourceIP: 12704}},
		{name: "two addresses", lim: host, clients: 6353, dst: loop,
			want: Sizing{LoadgenProcs: 1, TargetProcs: 1, PerProcess: 18000, PerSourceIP: 6352}},
		// Open files: 1,000 a process holds 900 connections.
		{name: "open files, loadgen", lim: Limits{OpenFiles: 1000, EphemeralPorts: 28232}, clients: 2000, loadgen: 2, dst: loop,
			err: []string{"Storm.LoadgenProcs: 2 cannot hold 2000 clients", "at most 900", "open-file limit 1000", "200 short", "use at least 3"}},
		{name: "open files, target", lim: Limits{OpenFiles: 1000, EphemeralPorts: 28232}, clients: 2000, tproc: 1, dst: loop,
			err: []string{"Server.Procs: 1 cannot hold 2000", "at most 900", "1100 short", "Server.Procs 3"}},
		{name: "open files, too many processes", lim: Limits{OpenFiles: 100, EphemeralPorts: 28232}, clients: 30000, dst: loop,
			err: []string{"Client.Clients: 30000 needs 334 processes", "at 90 connections each", "open-file limit 100", "over the 256", "6960 clients more than 23040 fit"}},
		// Ephemeral ports: 1,000 ports give an address 450 clients.
		{name: "ports, given addresses", lim: Limits{OpenFiles: 20000, EphemeralPorts: 1000}, clients: 1000, ips: 2, dst: loop,
			err: []string{"Client.SourceIPs: gives 2 addresses", "need 3", "about 450 ephemeral ports", "100 clients short"}},
		{name: "ports, chosen addresses", lim: Limits{OpenFiles: 20000, EphemeralPorts: 1000}, clients: 1000, dst: loop,
			want: Sizing{LoadgenProcs: 1, TargetProcs: 1, PerProcess: 18000, PerSourceIP: 225}},
		{name: "ports, remote target", lim: Limits{OpenFiles: 20000, EphemeralPorts: 1000}, clients: 1000, dst: netip.MustParseAddr("10.0.0.7"),
			err: []string{"Client.SourceIPs: 1000 clients need 3 source addresses", "give that many"}},
		// Memory: 1 GiB holds 2 processes of 20 MiB and (1 GiB - 40 MiB) / 12 KiB clients.
		{name: "memory", lim: Limits{OpenFiles: 1 << 20, EphemeralPorts: 1 << 20, MemAvailable: 1 << 30}, clients: 100000, dst: loop,
			err: []string{"Client.Clients: 100000 needs about 1.2 GiB", "12 KiB per client", "20 MiB for each of 2 processes", "1.0 GiB is available (MemAvailable)", "0.2 GiB short", "about 83968 clients fit"}},
		// A remote target's side is not counted against this machine.
		{name: "memory, remote target", lim: Limits{OpenFiles: 1 << 20, EphemeralPorts: 1 << 20, MemAvailable: 1 << 30}, clients: 80000, ips: 4, dst: netip.MustParseAddr("10.0.0.7"),
			want: Sizing{LoadgenProcs: 1, TargetProcs: 1, PerProcess: 943718, PerSourceIP: 20000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ips []netip.Addr
			if tc.ips > 0 {
				ips = LoopbackSources(tc.ips)
			}
			got, err := tc.lim.Size(tc.clients, tc.loadgen, tc.tproc, ips, tc.dst)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("sized %+v, want an error", got)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.LoadgenProcs != tc.want.LoadgenProcs || got.TargetProcs != tc.want.TargetProcs ||
				got.PerProcess != tc.want.PerProcess || got.PerSourceIP != tc.want.PerSourceIP {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if wantIPs := ceilDiv(tc.clients, tc.lim.ChosenPerSourceIP()); wantIPs > 1 && tc.ips == 0 && len(got.SourceIPs) != wantIPs {
				t.Errorf("%d source addresses, want %d", len(got.SourceIPs), wantIPs)
			}
		})
	}
}

// TestCheckMemberPorts: a loadgen agent's share must fit its source
// addresses' ports towards the target's one port, each address holding
// PerSourceIP clients of its own host's range; the refusal names the
// agent, the limit and by how much, before anything starts.
func TestCheckMemberPorts(t *testing.T) {
	ip := netip.MustParseAddr
	hostsRange := 65535 - 10000 + 1 // scripts/hosts.sh sets 10000-65535
	one := func(name string, n int) *hub.Member {
		return &hub.Member{Name: name, Role: hub.RoleLoadgen, Capacity: n, SourceIPs: []netip.Addr{ip("10.0.0.1")}, EphemeralPorts: hostsRange}
	}
	three := func(name string, n int) *hub.Member {
		m := one(name, n)
		m.SourceIPs = []netip.Addr{ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3")}
		return m
	}
	cases := []struct {
		name    string
		clients int
		members []*hub.Member
		want    string // "" fits
	}{
		// The fleet of the several-host acceptance with one address per
		// host: 40,000 each, 20,000 per address.
		{"one address each", 120000, []*hub.Member{one("h2", 40000), one("h3", 40000), one("h4", 40000)},
			"agent h2 takes 40000 clients on 1 source address(es), but one address carries 20000 clients towards the target's one port (90 % of half its 55536 ephemeral ports, at most 20000; connect() takes ports of one parity first): 20000 clients over; give that agent 2 source addresses"},
		{"three addresses each", 120000, []*hub.Member{three("h2", 40000), three("h3", 40000), three("h4", 40000)}, ""},
		{"20,000 on one address", 60000, []*hub.Member{one("h2", 20000), one("h3", 20000), one("h4", 20000)}, ""},
		// A host with the default range: 90 % of half of 28,232.
		{"default range", 13000, []*hub.Member{{Name: "h5", EphemeralPorts: 28232}},
			"agent h5 takes 13000 clients on 1 source address(es), but one address carries 12704 clients"},
		// An agent that did not say its range is held to PerSourceIP.
		{"range not known", 20001, []*hub.Member{{Name: "h6"}}, "one address carries 20000 clients towards the target's one port (at most 20000;"},
	}
	for _, c := range cases {
		err := checkMemberPorts(c.clients, c.members)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it to fit", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestAgentNice: a run's agents are niced only when they outnumber the
// cores more than four to one (a million clients: 112 on two cores), not
// in the bench's run (one of each) or a calibration run (three of each).
func TestAgentNice(t *testing.T) {
	for _, c := range []struct{ loadgens, targets, cores, want int }{
		{1, 1, 2, 0}, {3, 3, 2, 0}, {4, 4, 2, 0}, {5, 4, 2, AgentNice}, {56, 56, 2, AgentNice}, {56, 56, 64, 0},
	} {
		if got := agentNice(Sizing{LoadgenProcs: c.loadgens, TargetProcs: c.targets}, c.cores); got != c.want {
			t.Errorf("agentNice(%d+%d processes, %d cores) = %d, want %d", c.loadgens, c.targets, c.cores, got, c.want)
		}
	}
}

// TestGoMaxProcs: a role of more than one process, and at least as many
// as the cores, runs each on one core; a lone process keeps the runtime's
// choice.
func TestGoMaxProcs(t *testing.T) {
	for _, c := range []struct {
		lg, tg, cores int
		want          map[agent.Role]int
	}{
		{1, 1, 2, map[agent.Role]int{}},
		{2, 1, 2, map[agent.Role]int{agent.RoleLoadgen: 1}},
		{56, 56, 2, map[agent.Role]int{agent.RoleLoadgen: 1, agent.RoleTarget: 1}},
		{3, 3, 8, map[agent.Role]int{}},
		{1, 1, 1, map[agent.Role]int{}},
	} {
		got := goMaxProcs(Sizing{LoadgenProcs: c.lg, TargetProcs: c.tg}, c.cores)
		if !maps.Equal(got, c.want) {
			t.Errorf("%d loadgen and %d target processes on %d cores: %v, want %v", c.lg, c.tg, c.cores, got, c.want)
		}
	}
}
