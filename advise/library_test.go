package advise

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchLibrary: with a library, every candidate is a preset of it
// (what its options express), its default rule is the current policy,
// and the recommendation is printed as the library's own options object
// with the recommended values in milliseconds.
func TestSearchLibrary(t *testing.T) {
	cfg := small(t, "exp:initial=1s")
	cfg.Library = "socketio"
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Current.Policy.String(); got != "socketio" {
		t.Errorf("current policy %s, want the library's default, socketio", got)
	}
	for _, c := range res.Best {
		if c.Policy.Library.Name != "socketio" {
			t.Errorf("candidate %s is not a socketio preset", c.Policy)
		}
	}
	rec := res.Recommended().Policy
	snippet, ok := res.Snippet()
	if !ok {
		t.Fatal("no snippet for socketio")
	}
	for _, opt := range []string{"reconnectionDelay", "reconnectionDelayMax"} {
		d, err := time.ParseDuration(rec.Library.Option(opt))
		if err != nil {
			t.Fatal(err)
		}
		if want := opt + ": " + itoa(d.Milliseconds()) + ","; !strings.Contains(snippet, want) {
			t.Errorf("the snippet %q lacks %q (recommended: %s)", snippet, want, rec)
		}
	}
	if want := "randomizationFactor: " + rec.Library.Option("randomizationFactor") + ","; !strings.HasPrefix(snippet, "io(URL, {") || !strings.Contains(snippet, want) {
		t.Errorf("the snippet %q is not socket.io-client's options object with %q", snippet, want)
	}
}

// TestSearchLibraryCannot: a library whose options cannot spread a fleet
// (mqtt.js's fixed period) keeps its default, says so, and names the
// server-side mitigation that brings that fleet back soonest.
func TestSearchLibraryCannot(t *testing.T) {
	cfg := small(t, "exp:initial=1s")
	cfg.Library = "mqttjs"
	res, err := Search(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Recommended().Policy.String(); got != "mqttjs" || len(res.Best) != 1 {
		t.Errorf("recommended %s of %d, want mqttjs alone", got, len(res.Best))
	}
	snippet, _ := res.Snippet()
	if !strings.Contains(snippet, "no reconnectPeriod spreads a fleet") || !strings.Contains(snippet, "on the server: ") {
		t.Errorf("snippet %q", snippet)
	}
}

// TestLibraryUnknown: a library advise has no words for is a field error
// naming the libraries it has.
func TestLibraryUnknown(t *testing.T) {
	cfg := small(t, "exp:initial=1s")
	cfg.Library = "ably"
	_, err := Search(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "Advise.Library") || !strings.Contains(err.Error(), "socketio, centrifuge") {
		t.Errorf("got %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
