package haproxy

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseStat reads an answer of HAProxy 2.6 (two servers behind a
// frontend, captured from scripts/lb.sh): rows by name, empty columns as 0.
func TestParseStat(t *testing.T) {
	f, err := os.Open("testdata/showstat-2.6.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := ParseStat(f)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range st {
		keys = append(keys, s.Key()+":"+s.Status+":"+s.CheckStatus)
	}
	want := "fe/FRONTEND:OPEN:,be/s1:UP:L7OK,be/s2:UP:L7OK,be/BACKEND:UP:"
	if got := strings.Join(keys, ","); got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
	st2, err := ParseStat(strings.NewReader("# pxname,svname,status,check_status\nbe,s1,UP,* L7OK\n"))
	if err != nil || st2[0].CheckStatus != "L7OK" {
		t.Errorf("check in progress: %+v, %v; want L7OK", st2, err)
	}
	if st[0].Stot != 1 || st[0].Qcur != 0 {
		t.Errorf("frontend stot %d qcur %d, want 1 and 0 (empty)", st[0].Stot, st[0].Qcur)
	}
}

// TestParseStatErrors: answers that are not `show stat` CSV are errors
// that say what is wrong.
func TestParseStatErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		// The socket answered nothing (HAProxy going away).
		{"empty", "", "empty answer"},
		// A runtime API error message instead of CSV.
		{"message", "Unknown command.\n", "header line starts"},
		// A header without the columns a row is named by.
		{"no svname", "# pxname,status\nfe,OPEN\n", "no svname column"},
		// A counter that is not a count.
		{"bad count", "# pxname,svname,status,scur\nfe,FRONTEND,OPEN,-1\n", `scur "-1": not a count`},
		// A check in progress is marked "* ": the last result is kept
		// without the mark (here the row parses, so the error is the
		// next line's).
		{"check in progress", "# pxname,svname,status,check_status\nbe,s1,UP,* L7OK\n,,x\n", "line 3: no pxname"},
		// A row without a name.
		{"unnamed row", "# pxname,svname,status\n,,OPEN\n", "no pxname or svname"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseStat(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// FuzzParseStat: any input parses or fails, never panics.
func FuzzParseStat(f *testing.F) {
	b, err := os.ReadFile("testdata/showstat-2.6.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("# pxname,svname,status,scur\nfe,FRONTEND,OPEN,18446744073709551616\n")
	f.Add("# pxname,svname,status\n\"unterminated\n")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ParseStat(strings.NewReader(in))
		if err == nil {
			for _, s := range st {
				if s.Proxy == "" || s.Server == "" {
					t.Fatalf("row without a name: %+v", s)
				}
			}
		}
	})
}

// TestTotals: counters are taken first sample to last, summed over
// instances; peaks are the most at one sample; a counter that went back
// (HAProxy restarted) gives 0, not a wrapped number.
func TestTotals(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := &Sampler{Clients: []*Client{{}, {}}}
	row := func(srv, status string, scur, qcur, stot, h5, retr, redis uint64) Stat {
		return Stat{Proxy: "be", Server: srv, Status: status, Scur: scur, Qcur: qcur, Stot: stot, Hrsp5xx: h5, Wretr: retr, Wredis: redis}
	}
	s.samples = []Sample{
		{At: t0, Rows: map[string]Stat{"be/s1": row("s1", "UP", 10, 0, 100, 1, 0, 0), "be/BACKEND": row("BACKEND", "UP", 10, 0, 100, 5, 0, 0)}},
		{At: t0.Add(time.Second), Rows: map[string]Stat{"be/s1": row("s1", "DRAIN/UP", 30, 7, 150, 4, 6, 2), "be/BACKEND": row("BACKEND", "UP", 30, 7, 150, 9, 6, 2)}},
		{At: t0.Add(2 * time.Second), Rows: map[string]Stat{"be/s1": row("s1", "UP", 20, 0, 190, 4, 9, 3), "be/BACKEND": row("BACKEND", "UP", 20, 0, 90, 2, 9, 3)}},
	}
	tot := s.Totals()
	if tot.Instances != 2 || tot.Samples != 3 || len(tot.Rows) != 2 {
		t.Fatalf("totals %+v", tot)
	}
	s1, be := tot.Rows[0], tot.Rows[1]
	if s1.Server != "s1" || be.Server != "BACKEND" {
		t.Fatalf("row order %s, %s: want servers before BACKEND", s1.Server, be.Server)
	}
	if s1.SessionsPeak != 30 || s1.QueuePeak != 7 || s1.Sessions != 90 || s1.HTTP5xx != 3 || s1.Retries != 9 || s1.Redispatches != 3 || s1.LastStatus != "UP" {
		t.Errorf("s1 %+v", s1)
	}
	if be.Sessions != 0 || be.HTTP5xx != 0 {
		t.Errorf("BACKEND counters went back, want 0: %+v", be)
	}
	var csv strings.Builder
	if err := s.WriteCSV(&csv, t0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 7 || lines[0] != CSVHeader || lines[3] != "1.000,be,s1,DRAIN/UP,,30,7,150,4,0,0,6,2,0" {
		t.Errorf("haproxy.csv:\n%s", csv.String())
	}
}
