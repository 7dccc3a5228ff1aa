// Command livecost measures what the live page costs a run: a run of the
// bundled target and a fleet (storm.Run, in this process as `stampede
// run` would) with the page open, its CPU profiled, and optionally a
// second page that stops reading. It prints one JSON line: the run's CPU
// over every role, its R99 and length, the frames the open page read and
// the frames dropped; the profile's samples under the pprof label
// stampede=live are the page's own CPU (lab/live-cost.sh reads them).
//
//	go run ./livecost -exe bin/stampede -clients 50000 -profile cpu.pprof [-stall]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/report/live"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
)

func main() {
	exe := flag.String("exe", "", "the stampede binary the agents run (required)")
	clients := flag.Int("clients", 50000, "the fleet's size")
	duration := flag.Duration("duration", 40*time.Second, "the run's length")
	schedule := flag.String("chaos", "at 15s restart abrupt down=3s", "the chaos schedule")
	policy := flag.String("policy", "exp:initial=1s,max=8s,jitter=0.5", "the fleet's policy")
	profile := flag.String("profile", "cpu.pprof", "this process's CPU profile")
	out := flag.String("out", "", "the results folder (default: a temporary one)")
	stall := flag.Bool("stall", false, "open a second page that never reads")
	noPage := flag.Bool("no-page", false, "serve the page but open none")
	flag.Parse()
	if err := run(*exe, *clients, *duration, *schedule, *policy, *profile, *out, *stall, *noPage); err != nil {
		fmt.Fprintln(os.Stderr, "livecost:", err)
		os.Exit(1)
	}
}

func run(exe string, clients int, duration time.Duration, schedule, policy, profile, out string, stall, noPage bool) error {
	if exe == "" {
		return fmt.Errorf("-exe is required")
	}
	pol, err := backoff.Parse(policy)
	if err != nil {
		return err
	}
	sched, err := chaos.Parse(schedule)
	if err != nil {
		return err
	}
	if out == "" {
		if out, err = os.MkdirTemp("", "livecost"); err != nil {
			return err
		}
		defer os.RemoveAll(out)
		out += "/run"
	}
	urls := make(chan string, 1)
	cfg := storm.Config{
		Target:   target.Config{Server: spec.Server{Backlog: 65535}},
		Fleet:    loadgen.Config{Client: spec.Client{Clients: clients, Policy: pol, Seed: 1}},
		Schedule: sched, ScheduleText: schedule, Duration: duration, Out: out, Exe: exe,
		ProgressInterval: 5 * time.Second, Log: os.Stderr,
		Live: &live.Config{Announce: func(u string) { urls <- u }},
	}
	f, err := os.Create(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	var frames atomic.Int64
	go func() {
		u := <-urls
		if noPage {
			return
		}
		if stall {
			go stalled(u)
		}
		read(u, &frames)
	}()
	begin := time.Now()
	res, runErr := storm.Run(context.Background(), cfg)
	wall := time.Since(begin)
	pprof.StopCPUProfile()
	if res == nil {
		return runErr
	}
	s := res.Summary
	var cpu float64
	for _, r := range s.Resources {
		cpu += r.CPUSeconds
	}
	var r99 *float64
	if len(s.Recovery) > 0 {
		r99 = s.Recovery[0].R99S
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"clients": clients, "stall": stall, "page": !noPage, "run_cpu_s": cpu, "r99_s": r99,
		"duration_s": s.DurationS, "wall_s": wall.Seconds(), "frames_read": frames.Load(), "err": fmt.Sprint(runErr),
	})
}

// read opens the page as a browser does (the token for the cookie),
// reads its stream to the end, counting frames, and then takes
// report.html, as the page's script does.
func read(u string, frames *atomic.Int64) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if resp, err := c.Get(u); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	base := strings.SplitN(u, "?", 2)[0]
	resp, err := c.Get(base + "events")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if r, err := c.Get(base + "report.html"); err == nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
			return
		}
		if strings.HasPrefix(line, "data: ") {
			frames.Add(1)
		}
	}
}

// stalled opens the stream and never reads a byte of it.
func stalled(u string) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		return
	}
	resp.Body.Close()
	pu, _ := url.Parse(u)
	var cookie string
	for _, ck := range resp.Cookies() {
		cookie = ck.Name + "=" + ck.Value
	}
	conn, err := net.Dial("tcp", pu.Host)
	if err != nil {
		return
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n\r\n", pu.Host, cookie)
	select {} // never read; the process ends with the run
}
