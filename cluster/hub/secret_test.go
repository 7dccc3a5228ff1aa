package hub

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// passwordServer starts a NATS server that wants a user and a password,
// and returns its URL with them in the user info.
func passwordServer(t *testing.T, user, pass string) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Username: user, Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(s.Shutdown)
	return "nats://" + user + ":" + pass + "@" + s.Addr().String()
}

// logLines collects what a Join logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestNATSPasswordNeverPrinted: the password of a NATS URL is in none of
// the lines a coordinator and an agent print: the coordinator's URL and
// the command it tells each host to run, the agent's "joined run ... at"
// line, its waiting lines and its error.
func TestNATSPasswordNeverPrinted(t *testing.T) {
	const pass = "pw-0f9e8d7c"
	url := passwordServer(t, "natsuser", pass)
	h := newHub(t, Config{NATS: url})
	for what, s := range map[string]string{"URL": h.URL(), "JoinCommand": h.JoinCommand()} {
		if strings.Contains(s, pass) || strings.Contains(s, "natsuser") {
			t.Errorf("%s = %q shows the URL's user info", what, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, _ := ReadToken(h.cfg.TokenFile)
	var log logLines
	j, err := Join(ctx, JoinConfig{NATS: url, Token: tok, Name: "a", Role: RoleAny, JoinTimeout: 10 * time.Second, Log: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Leave()
	if got := log.text(); !strings.Contains(got, "joined") || strings.Contains(got, pass) {
		t.Errorf("the agent logged %q: want a joined line without the password", got)
	}

	// No server there: the waiting lines and the error.
	log = logLines{}
	_, err = Join(ctx, JoinConfig{NATS: "nats://natsuser:" + pass + "@127.0.0.1:1", Token: tok, Name: "b", Role: RoleAny,
		JoinTimeout: 1500 * time.Millisecond, Log: log.logf})
	if err == nil || strings.Contains(err.Error(), pass) || strings.Contains(log.text(), pass) || !strings.Contains(log.text(), "waiting") {
		t.Errorf("no server: error %v, log %q: want both without the password", err, log.text())
	}
}
