package hoststat

import (
	"context"
	"encoding/csv"
	"io"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// KernelSampler reads the herd counters (KernelSnapshot) once per interval
// while a run goes, so kernel.csv shows when the accept queue overflowed,
// not only how often. Safe for concurrent use.
type KernelSampler struct {
	interval time.Duration
	read     func() (KernelCounters, error) // KernelSnapshot, or a fake in tests
	now      func() time.Time

	mu      sync.Mutex
	first   KernelCounters
	samples []kernelSample
	err     error
	stopped bool // Stop was called: Sample does nothing
}

type kernelSample struct {
	at time.Time
	d  results.KernelDelta
}

// NewKernelSampler returns a sampler that reads every interval (1 s if not
// positive).
func NewKernelSampler(interval time.Duration) *KernelSampler {
	if interval <= 0 {
		interval = time.Second
	}
	return &KernelSampler{interval: interval, read: KernelSnapshot, now: time.Now}
}

// Run samples at once, then every interval until ctx is done, then once
// more.
func (k *KernelSampler) Run(ctx context.Context) {
	k.Sample()
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			k.Sample()
			return
		case <-t.C:
			k.Sample()
		}
	}
}

// Sample reads the counters now. The first sample is the baseline every
// later one is counted from. A failed read is skipped and kept for Err.
// After Stop it does nothing.
func (k *KernelSampler) Sample() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	at := k.now()
	c, err := k.read()
	if err != nil {
		k.err = err
		return
	}
	if k.first == nil {
		k.first = c
	}
	k.samples = append(k.samples, kernelSample{at, Delta(k.first, c)})
}

// Stop takes a last sample and ends sampling: a Run still winding down
// adds nothing after it, so kernel.csv's last row and Total stay the run's
// end as the caller saw it.
func (k *KernelSampler) Stop() {
	k.Sample()
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
}

// Total returns the change of the counters from the first sample to the
// last: kernel.csv's last row, and what summary.json "kernel" holds, so
// the two always agree. ok is false when no sample was taken.
func (k *KernelSampler) Total() (d results.KernelDelta, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.samples) == 0 {
		return results.KernelDelta{}, false
	}
	return k.samples[len(k.samples)-1].d, true
}

// Err returns the last read error, nil if every read worked.
func (k *KernelSampler) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Len returns the number of samples taken.
func (k *KernelSampler) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.samples)
}

// kernelColumns are results.KernelDelta's JSON names, in field order: kernel.csv
// has the same columns as summary.json "kernel".
func kernelColumns() []string {
	t := reflect.TypeFor[results.KernelDelta]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Tag.Get("json")
	}
	return out
}

// WriteCSV writes kernel.csv: t_s from start (the run's start), then
// each herd counter as its change since the first sample (cumulative, so
// a missed sample loses nothing; a plot differentiates):
//
//	t_s,ListenOverflows,ListenDrops,TCPSynRetrans,...
//	1.002,249,249,83,...
func (k *KernelSampler) WriteCSV(w io.Writer, start time.Time) error {
	k.mu.Lock()
	samples := append([]kernelSample(nil), k.samples...)
	k.mu.Unlock()
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{"t_s"}, kernelColumns()...)); err != nil {
		return err
	}
	for _, s := range samples {
		v := reflect.ValueOf(s.d)
		rec := make([]string, 1, v.NumField()+1)
		rec[0] = strconv.FormatFloat(s.at.Sub(start).Seconds(), 'f', 3, 64)
		for i := range v.NumField() {
			rec = append(rec, strconv.FormatInt(v.Field(i).Int(), 10))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
