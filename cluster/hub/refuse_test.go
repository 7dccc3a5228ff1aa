package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// hostile is what a stranger on a shared server answers every hello
// with: an unsigned refusal that would recolour the terminal and set its
// title if printed as is.
const hostile = "\x1b[31mgo away\x1b]0;pwned\x07 now\r\n"

// refuseEveryHello connects a stranger to url that answers each hello
// with hostile, unsigned, and reports each answer on the channel.
func refuseEveryHello(t *testing.T, url string) <-chan struct{} {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	answered := make(chan struct{}, 100)
	if _, err := nc.Subscribe(JoinSubject, func(m *nats.Msg) {
		_ = nc.PublishMsg(newMsg(nil, m.Reply, 0, kRefused, 0, []byte(hostile)))
		select {
		case answered <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return answered
}

// An unsigned refusal on a shared server does not knock an agent off: it
// waits for its own coordinator until its join timeout, and what it
// prints of the stranger's text has no control characters.
func TestUnsignedRefusalIgnored(t *testing.T) {
	url := openServer(t)
	answered := refuseEveryHello(t, url)
	tok, err := WriteToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}

	// No coordinator: at the join timeout the agent says who answered,
	// its text made printable.
	var logged []string
	_, err = Join(context.Background(), JoinConfig{NATS: url, Token: tok, Name: "alone", Role: RoleLoadgen,
		JoinTimeout: time.Second, Log: func(f string, a ...any) { logged = append(logged, f) }})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Why, "go away") {
		t.Fatalf("Join = %v, want a RefusedError quoting the unsigned refusal", err)
	}
	if strings.ContainsAny(re.Why, "\x1b\x07\r\n") {
		t.Errorf("refusal printed with control characters: %q", re.Why)
	}
	if len(logged) == 0 {
		t.Error("the unsigned refusal was not logged")
	}

	// The run's coordinator comes up after the stranger has refused, past
	// the 2 s an agent used to wait: the agent still joins it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	joined := make(chan error, 1)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := writeTokenAt(tokenFile, tok); err != nil {
		t.Fatal(err)
	}
	for len(answered) > 0 {
		<-answered
	}
	go func() {
		_, err := Join(ctx, JoinConfig{NATS: url, Token: tok, Name: "patient", Role: RoleLoadgen, JoinTimeout: 20 * time.Second})
		joined <- err
	}()
	<-answered
	time.Sleep(2500 * time.Millisecond)
	h := newHub(t, Config{NATS: url, TokenFile: tokenFile})
	if err := <-joined; err != nil {
		t.Fatalf("Join after an unsigned refusal: %v", err)
	}
	if _, err := h.Wait(ctx, 1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// writeTokenAt writes tok to path as WriteToken would.
func writeTokenAt(path string, tok []byte) error {
	return os.WriteFile(path, append(append([]byte(nil), tok...), '\n'), 0o600)
}
