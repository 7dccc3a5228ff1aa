package hoststat

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestKernelSamplerCSV(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	reads := []KernelCounters{
		{"TcpExt.ListenOverflows": 100, "TcpExt.ListenDrops": 100, "Tcp.ActiveOpens": 7},
		{"TcpExt.ListenOverflows": 349, "TcpExt.ListenDrops": 350, "Tcp.ActiveOpens": 17},
		nil, // a failed read
		{"TcpExt.ListenOverflows": 400, "TcpExt.ListenDrops": 401, "Tcp.ActiveOpens": 20, "TcpExt.TCPSynRetrans": 3},
	}
	k := NewKernelSampler(0)
	if _, ok := k.Total(); ok {
		t.Errorf("Total before any sample: ok")
	}
	n := 0
	k.read = func() (KernelCounters, error) {
		c := reads[n]
		n++
		if c == nil {
			return nil, errors.New("no /proc")
		}
		return c, nil
	}
	k.now = func() time.Time { return start.Add(time.Duration(n) * time.Second) }
	for range reads {
		k.Sample()
	}
	if k.Len() != 3 || k.Err() == nil {
		t.Fatalf("%d samples, err %v", k.Len(), k.Err())
	}
	var b bytes.Buffer
	if err := k.WriteCSV(&b, start); err != nil {
		t.Fatal(err)
	}
	want := "t_s,ListenOverflows,ListenDrops,TCPSynRetrans,TCPReqQFullDoCookies,TCPReqQFullDrop,SyncookiesSent," +
		"SyncookiesRecv,SyncookiesFailed,TCPTimeouts,TCPAbortOnTimeout,TCPBacklogDrop,ActiveOpens,PassiveOpens," +
		"AttemptFails,EstabResets,RetransSegs,OutRsts\n" +
		"0.000,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n" +
		"1.000,249,250,0,0,0,0,0,0,0,0,0,10,0,0,0,0,0\n" +
		"3.000,300,301,3,0,0,0,0,0,0,0,0,13,0,0,0,0,0\n"
	if b.String() != want {
		t.Errorf("kernel.csv:\n%s\nwant\n%s", b.String(), want)
	}
	// After Stop, nothing is sampled any more (a Run winding down).
	reads = append(reads, KernelCounters{"TcpExt.ListenOverflows": 500},
		KernelCounters{"TcpExt.ListenOverflows": 600})
	k.Stop()
	k.Sample()
	if k.Len() != 4 {
		t.Errorf("%d samples after Stop and Sample; want 4", k.Len())
	}
	// Total is the last row: what summary.json "kernel" holds.
	if d, ok := k.Total(); !ok || d.ListenOverflows != 400 || d.ListenDrops != 0 {
		t.Errorf("Total = %+v, %v; want the last row", d, ok)
	}
}

// The real /proc of this namespace reads, and Run stops with its context.
func TestKernelSamplerRun(t *testing.T) {
	k := NewKernelSampler(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	k.Run(ctx)
	if k.Err() != nil || k.Len() < 2 {
		t.Fatalf("%d samples, err %v", k.Len(), k.Err())
	}
	var b bytes.Buffer
	k.WriteCSV(&b, time.Now())
	if !strings.HasPrefix(b.String(), "t_s,ListenOverflows,") {
		t.Errorf("kernel.csv %q", b.String())
	}
}
