package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Sample is the counters of every row at one time, summed over the
// HAProxy instances (several processes in front of the same servers).
type Sample struct {
	// At is when the sample was read.
	At time.Time
	// Rows are keyed by Stat.Key; Status joins the instances' statuses
	// with "/" when they differ ("DRAIN/UP").
	Rows map[string]Stat
}

// Sampler reads `show stat` from every instance once per Interval: the
// rows of haproxy.csv and the summary's totals.
type Sampler struct {
	// Clients are one per HAProxy instance.
	Clients []*Client
	// Interval is the time between samples; zero means one second.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	samples []Sample
	errs    int
	lastErr error
}

// Run samples until ctx ends; the first sample is taken at once.
func (s *Sampler) Run(ctx context.Context) {
	iv := s.Interval
	if iv <= 0 {
		iv = time.Second
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		s.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check asks every instance for its counters once, so a wrong socket
// fails before a run starts rather than after it.
func (s *Sampler) Check(ctx context.Context) error {
	if len(s.Clients) == 0 {
		return errors.New("no HAProxy socket")
	}
	for _, c := range s.Clients {
		if _, err := c.ShowStat(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Sample reads every instance once and keeps the sum. An instance that
// does not answer makes no sample (a partial sum would look like a drop);
// the failure is counted in the totals' note.
func (s *Sampler) Sample(ctx context.Context) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	at := now()
	sum := map[string]Stat{}
	for _, c := range s.Clients {
		st, err := c.ShowStat(ctx)
		if err != nil {
			s.mu.Lock()
			s.errs++
			s.lastErr = err
			s.mu.Unlock()
			return
		}
		for _, r := range st {
			sum[r.Key()] = add(sum[r.Key()], r)
		}
	}
	s.mu.Lock()
	s.samples = append(s.samples, Sample{At: at, Rows: sum})
	s.mu.Unlock()
}

// add sums b into a (a zero a takes b's names).
func add(a, b Stat) Stat {
	if a.Proxy == "" {
		return b
	}
	a.Scur += b.Scur
	a.Stot += b.Stot
	a.Qcur += b.Qcur
	a.Econ += b.Econ
	a.Eresp += b.Eresp
	a.Wretr += b.Wretr
	a.Wredis += b.Wredis
	a.Hrsp5xx += b.Hrsp5xx
	a.Chkdown += b.Chkdown
	if !slices.Contains(strings.Split(a.Status, "/"), b.Status) {
		a.Status += "/" + b.Status
	}
	if !slices.Contains(strings.Split(a.CheckStatus, "/"), b.CheckStatus) {
		a.CheckStatus += "/" + b.CheckStatus
	}
	return a
}

// Samples returns the samples taken so far.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// CSVHeader is the first line of haproxy.csv (docs/loadbalancer.md).
const CSVHeader = "t_s,proxy,server,status,check_status,sessions,queue,sessions_total,http_5xx,connect_errors,response_errors,retries,redispatches,checks_down"

// WriteCSV writes haproxy.csv: one row per sample and frontend, backend or
// server, t_s seconds from start, counters as HAProxy gives them (totals
// since it started; sessions and queue are current).
func (s *Sampler) WriteCSV(w io.Writer, start time.Time) error {
	if _, err := fmt.Fprintln(w, CSVHeader); err != nil {
		return err
	}
	for _, smp := range s.Samples() {
		for _, k := range sortedKeys(smp.Rows) {
			r := smp.Rows[k]
			if _, err := fmt.Fprintf(w, "%.3f,%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d\n",
				smp.At.Sub(start).Seconds(), r.Proxy, r.Server, r.Status, r.CheckStatus,
				r.Scur, r.Qcur, r.Stot, r.Hrsp5xx, r.Econ, r.Eresp, r.Wretr, r.Wredis, r.Chkdown); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortedKeys orders rows as HAProxy lists them per proxy: FRONTEND, the
// servers, BACKEND; proxies by name.
func sortedKeys(rows map[string]Stat) []string {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	rank := func(s Stat) int {
		switch s.Server {
		case "FRONTEND":
			return 0
		case "BACKEND":
			return 2
		}
		return 1
	}
	slices.SortFunc(keys, func(a, b string) int {
		ra, rb := rows[a], rows[b]
		if c := strings.Compare(ra.Proxy, rb.Proxy); c != 0 {
			return c
		}
		if c := rank(ra) - rank(rb); c != 0 {
			return c
		}
		return strings.Compare(ra.Server, rb.Server)
	})
	return keys
}

// Totals is summary.json's "haproxy": what the load balancer counted
// during the run, first sample to last, summed over its instances.
type Totals struct {
	// Instances is the number of HAProxy runtime sockets read.
	Instances int `json:"instances"`
	// Samples is the number of complete samples taken.
	Samples int `json:"samples"`
	// Rows are the frontend, backend and server figures, in haproxy.csv's
	// order.
	Rows []RowTotals `json:"rows"`
	// Note says why figures are missing or partial (a socket that stopped
	// answering); empty when every sample was read.
	Note string `json:"note,omitempty"`
}

// RowTotals is one frontend's, backend's or server's figures for the run.
type RowTotals struct {
	Proxy  string `json:"proxy"`
	Server string `json:"server"`
	// SessionsPeak is the most sessions open at one sample.
	SessionsPeak uint64 `json:"sessions_peak"`
	// QueuePeak is the most clients queued for a server at one sample.
	QueuePeak uint64 `json:"queue_peak"`
	// Sessions is the sessions opened during the run.
	Sessions uint64 `json:"sessions"`
	// HTTP5xx is the 5xx answers during the run (HAProxy's own 502, 503
	// and 504 included).
	HTTP5xx uint64 `json:"http_5xx"`
	// ConnectErrors is the failed connects to servers during the run.
	ConnectErrors uint64 `json:"connect_errors"`
	// ResponseErrors is the bad or aborted server responses.
	ResponseErrors uint64 `json:"response_errors"`
	// Retries is the connect retries; Redispatches the retries sent to
	// another server.
	Retries      uint64 `json:"retries"`
	Redispatches uint64 `json:"redispatches"`
	// ChecksDown is the times the health check marked it DOWN.
	ChecksDown uint64 `json:"checks_down"`
	// LastStatus is its status at the last sample.
	LastStatus string `json:"last_status"`
}

// Totals sums the run from the first sample to the last; nil without a
// sample.
func (s *Sampler) Totals() *Totals {
	smp := s.Samples()
	s.mu.Lock()
	errs, lastErr := s.errs, s.lastErr
	s.mu.Unlock()
	t := &Totals{Instances: len(s.Clients), Samples: len(smp)}
	if errs > 0 {
		t.Note = fmt.Sprintf("%d sample(s) missing: %v", errs, lastErr)
	}
	if len(smp) == 0 {
		return t
	}
	first, last := smp[0].Rows, smp[len(smp)-1].Rows
	for _, k := range sortedKeys(last) {
		l, f := last[k], first[k] // a row that appeared later counts from 0
		r := RowTotals{
			Proxy: l.Proxy, Server: l.Server, LastStatus: l.Status,
			Sessions:       delta(f.Stot, l.Stot),
			HTTP5xx:        delta(f.Hrsp5xx, l.Hrsp5xx),
			ConnectErrors:  delta(f.Econ, l.Econ),
			ResponseErrors: delta(f.Eresp, l.Eresp),
			Retries:        delta(f.Wretr, l.Wretr),
			Redispatches:   delta(f.Wredis, l.Wredis),
			ChecksDown:     delta(f.Chkdown, l.Chkdown),
		}
		for _, x := range smp {
			r.SessionsPeak = max(r.SessionsPeak, x.Rows[k].Scur)
			r.QueuePeak = max(r.QueuePeak, x.Rows[k].Qcur)
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// delta is b-a for a counter, 0 if it went back (HAProxy was restarted
// and counts from 0 again: the run's figure is then unknown, not negative).
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}
