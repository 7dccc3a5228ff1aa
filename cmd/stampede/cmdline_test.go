package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// TestRunCmdlineHoldsNoSecret: `stampede run` with a store URL whose
// password is a secret, as a real process with real children (target and
// loadgen processes, the store's connections made in them): while the run
// goes, /proc/PID/cmdline of every process is read every few
// milliseconds, and none of stampede's descendants ever shows the
// password, nor stampede itself once it has printed its first line (before
// its first package inits it is in the arguments the kernel was given:
// docs/secrets.md). The results folder holds the password nowhere.
func TestRunCmdlineHoldsNoSecret(t *testing.T) {
	const pg = "127.0.0.1:5432"
	if c, err := net.DialTimeout("tcp", pg, time.Second); err != nil {
		testenv.SkipUnlessRequired(t, "PostgreSQL unreachable on %s: %v", pg, err)
	} else {
		c.Close()
	}
	secret := "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-cmdline"
	out := filepath.Join(t.TempDir(), "res")
	p := startStampede(t, "run", "--clients", "20", "--duration", "3s", "--chaos", "at 1s restart abrupt down=300ms",
		"--store", "postgres://postgres:"+secret+"@"+pg+"/test?sslmode=disable", "--out", out)
	root := p.cmd.Process.Pid
	var (
		mu       sync.Mutex
		children = map[int]bool{}
		leaks    = map[int]string{} // one command line per process
		started  bool               // stampede printed its first line
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			first := p.stderrLen() > 0
			for pid, cmdline := range cmdlines() {
				isChild := descends(pid, root)
				mu.Lock()
				if isChild {
					children[pid] = true
				}
				if bytes.Contains(cmdline, []byte(secret)) && (isChild || (pid == root && first)) {
					leaks[pid] = string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
				}
				started = started || first
				mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("run: %v\n%s", err, p.errText())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end:\n%s", p.errText())
	}
	close(stop)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	if len(children) < 2 || !started {
		t.Errorf("saw %d child processes, started %v: the sampler looked at nothing", len(children), started)
	}
	for pid, l := range leaks {
		t.Errorf("the store password in the command line of %d: %s", pid, strings.ReplaceAll(l, secret, "<SECRET>"))
	}
	found := false
	_ = filepath.Walk(out, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the store password", path)
			}
			found = true
		}
		return nil
	})
	if !found {
		t.Errorf("no results in %s", out)
	}
}

// cmdlines returns /proc/PID/cmdline of every process that can be read.
func cmdlines() map[int][]byte {
	out := map[int][]byte{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
			out[pid] = b
		}
	}
	return out
}

// descends reports whether pid is a descendant of root (its parent, or
// its parent's parent..., is root).
func descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...: comm may hold spaces and parens.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			return false
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return false
		}
		if pid == root {
			return true
		}
	}
	return false
}

// stderrLen is how much the process has printed on stderr so far.
func (p *stampedeProc) stderrLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Len()
}
