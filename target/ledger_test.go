package target

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// close unmaps the ledger. A server keeps its ledger mapped until the
// process exits; tests open several.
func (l *retryLedger) close() error { return unix.Munmap(l.mem) }

// Two mappings of one ledger, as two processes of a group have: a note
// made through one is seen through the other, to the millisecond.
func TestRetryLedger(t *testing.T) {
	epoch := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	path, err := CreateRetryLedger(t.TempDir(), epoch)
	if err != nil {
		t.Fatal(err)
	}
	a, b := mapLedger(t, path), mapLedger(t, path)

	now := epoch.Add(time.Hour)
	nb := now.Add(2 * time.Second)
	a.note("127.0.0.1/7", nb, now)
	for _, c := range []struct {
		name  string
		key   string
		at    time.Time
		early bool
	}{
		{"right after the rejection", "127.0.0.1/7", now.Add(time.Millisecond), true},
		{"a millisecond before not-before", "127.0.0.1/7", nb.Add(-time.Millisecond), true},
		{"at not-before", "127.0.0.1/7", nb, false},
		{"after not-before", "127.0.0.1/7", nb.Add(time.Second), false},
		{"another client", "127.0.0.1/8", now, false},
		{"the same id from another address", "127.0.0.2/7", now, false},
	} {
		if got := b.early(c.key, c.at); got != c.early {
			t.Errorf("%s: early = %v; want %v", c.name, got, c.early)
		}
	}

	// A later rejection of the same client replaces its entry.
	b.note("127.0.0.1/7", nb.Add(time.Minute), nb)
	if !a.early("127.0.0.1/7", nb.Add(time.Second)) {
		t.Error("a second note did not move the client's not-before")
	}

	// Many clients: each set keeps its ways; with far fewer clients than
	// entries nearly every one is remembered.
	const clients = 20000
	for i := range clients {
		a.note("127.0.0.1/"+strconv.Itoa(i), nb, now)
	}
	kept := 0
	for i := range clients {
		if b.early("127.0.0.1/"+strconv.Itoa(i), now) {
			kept++
		}
	}
	if kept < clients*99/100 {
		t.Errorf("%d of %d clients remembered; want at least 99%%", kept, clients)
	}

	if _, err := openLedger(os.DevNull); err == nil {
		t.Error("openLedger accepted a file that is not a ledger")
	}
}

// Until a rejection notes an entry, looking clients up reads the ledger's
// header alone: a page of the mapping once read counts in the process's
// RSS, and every upgrade looks its client up, so a group of target
// processes would otherwise each carry all of it.
func TestRetryLedgerUnreadUntilNoted(t *testing.T) {
	path, err := CreateRetryLedger(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l := mapLedger(t, path)
	const clients = 20000
	now := time.Now()
	lookups := func() {
		for i := range clients {
			if l.early("127.0.0.1/"+strconv.Itoa(i), now) {
				t.Fatalf("client %d early in a ledger with no rejection", i)
			}
		}
	}
	lookups()
	if rss := mappedRSS(t, l.mem); rss > 4<<10 {
		t.Errorf("after %d lookups and no rejection, %d KiB of the ledger resident; want the header's page at most", clients, rss>>10)
	}
	// Once a client was rejected, lookups read their sets.
	l.note("127.0.0.2/1", now.Add(time.Second), now)
	lookups()
	if rss := mappedRSS(t, l.mem); rss < ledgerSize/2 {
		t.Errorf("after a rejection and %d lookups, %d KiB of the ledger resident; want most of its %d KiB", clients, rss>>10, ledgerSize>>10)
	}
}

// mapLedger maps the ledger at path for the test, unmapped when it ends.
func mapLedger(t *testing.T, path string) *retryLedger {
	t.Helper()
	l, err := openLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.close() })
	return l
}

// mappedRSS returns the resident bytes of the mapping that starts at
// mem's first byte, from /proc/self/smaps.
func mappedRSS(t *testing.T, mem []byte) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&mem[0]))), 16) + "-"
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			in = strings.HasPrefix(f[0], start)
		case in && len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}

// peerGone tells a client that closed after sending its request (it gave
// up waiting) from one still waiting for the answer.
func TestPeerGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		name  string
		close bool
		gone  bool
	}{
		{"waiting", false, false},
		{"gave up", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			cl.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			buf := make([]byte, 64)
			if _, err := sc.Read(buf); err != nil { // the server read the request
				t.Fatal(err)
			}
			tcp := sc.(*net.TCPConn)
			if c.close {
				cl.Close()
				eventually(t, "the client's FIN to arrive", func() bool { return peerGone(tcp) })
			} else if peerGone(tcp) {
				t.Fatal("peerGone for a client waiting for its answer")
			}
		})
	}
}
