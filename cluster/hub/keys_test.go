package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The keys a token yields differ from it and from each other, and are
// fixed by the token alone (a coordinator and its agents derive the same).
func TestDeriveKeys(t *testing.T) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	k := deriveKeys(tok)
	if again := deriveKeys(tok); again.nats != k.nats || !bytes.Equal(again.sign, k.sign) {
		t.Fatal("deriveKeys is not a function of the token")
	}
	other := deriveKeys([]byte("0123456789abcdef0123456789abcdeF"))
	sign := hex.EncodeToString(k.sign)
	switch {
	case k.nats == string(tok) || bytes.Equal(k.sign, tok):
		t.Error("a derived key equals the token")
	case k.nats == sign:
		t.Error("the NATS credential equals the signing key")
	case other.nats == k.nats || bytes.Equal(other.sign, k.sign):
		t.Error("two tokens yield the same keys")
	case len(k.nats) != 64 || len(k.sign) != 32:
		t.Errorf("keys of %d and %d bytes, want 64 hex digits and 32 bytes", len(k.nats), len(k.sign))
	}
}

// An agent's CONNECT, the first thing a NATS server (or anyone on the
// wire, without TLS) reads from it, carries the credential derived for
// NATS: neither the token nor the signing key.
func TestConnectHidesToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	connect := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		fmt.Fprintf(c, "INFO {\"server_id\":\"posing\",\"version\":\"2.10.0\",\"go\":\"go1\",\"host\":\"127.0.0.1\",\"port\":%d,\"headers\":true,\"max_payload\":1048576,\"proto\":1,\"auth_required\":true}\r\n", port)
		line, _ := bufio.NewReader(c).ReadString('\n')
		connect <- line
	}()

	tok, err := WriteToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan error, 1)
	go func() {
		_, err := Join(ctx, JoinConfig{NATS: "nats://" + ln.Addr().String(), Token: tok, Name: "a", Role: RoleLoadgen, JoinTimeout: 5 * time.Second})
		joined <- err
	}()
	var line string
	select {
	case line = <-connect:
	case <-time.After(10 * time.Second):
		t.Fatal("no CONNECT within 10s")
	}
	cancel()
	<-joined

	body, ok := strings.CutPrefix(strings.TrimSpace(line), "CONNECT ")
	var c struct {
		Token string `json:"auth_token"`
	}
	if !ok || json.Unmarshal([]byte(body), &c) != nil {
		t.Fatalf("first line %q is not a CONNECT", line)
	}
	k := deriveKeys(tok)
	if c.Token != k.nats {
		t.Errorf("CONNECT auth_token %q, want the derived NATS credential %q", c.Token, k.nats)
	}
	for what, secret := range map[string]string{"token": string(tok), "signing key": hex.EncodeToString(k.sign), "raw signing key": string(k.sign)} {
		if strings.Contains(line, secret) {
			t.Errorf("CONNECT holds the %s: %s", what, line)
		}
	}
}

// A token file that someone else could have written, or can read, is
// refused with one line naming it and its mode; the modes WriteToken
// and a Kubernetes Secret volume leave are accepted.
func TestTokenFileTrust(t *testing.T) {
	for _, tt := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},  // as WriteToken leaves it
		{0o400, true},  // read-only
		{0o666, false}, // anyone may replace it
		{0o604, false}, // anyone may read it
		{0o620, false}, // the group may replace it
	} {
		t.Run(fmt.Sprintf("%04o", tt.mode), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stampede.token")
			if err := os.WriteFile(path, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := ReadToken(path)
			if tt.ok {
				if err != nil {
					t.Fatalf("ReadToken: %v", err)
				}
				return
			}
			want := fmt.Sprintf("Hub.TokenFile: %s: mode %04o, ", path, tt.mode)
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ReadToken = %v, want one line starting %q", err, want)
			}
			if _, err := New(Config{TokenFile: path}); err == nil {
				t.Error("a hub started with an untrusted token file")
			}
		})
	}
	// Another user's file, however strict its mode (root's aside).
	path := filepath.Join(t.TempDir(), "token")
	if _, err := WriteToken(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		if err := trustedTokenFile(fi, os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "owned by uid") {
			t.Errorf("another user's token file: %v, want refused", err)
		}
	}
}
