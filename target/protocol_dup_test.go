package target

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stampede-dev/stampede/store"
)

// quietFeed is a store shared with "other processes" (the test, appending
// to it directly) whose feed announces nothing: the room learns what
// others stored only from the store itself, as a process whose feed lags.
type quietFeed struct{ store.Store }

func (quietFeed) Follow(ctx context.Context, _ func(store.Update)) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestProtocolDupAckAfterOthers: a resend whose first copy another
// process stored, after messages this process has not delivered yet,
// is ACKed with its original seq only once the sender was sent every
// seq before it. The sender takes an ack's seq as its last seen: an ack
// above what it was sent would make its next resume skip the seqs in
// between, a loss no replay repairs.
func TestProtocolDupAckAfterOthers(t *testing.T) {
	st, err := store.OpenFile(filepath.Join(t.TempDir(), "s"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProtocol(quietFeed{st})
	s := startServer(t, Config{Handler: p})
	t.Cleanup(func() { p.Close(); st.Close() })

	alice := dialProto(t, s, "alice")
	alice.Send(`{"type":"join","room":"r"}`)
	alice.Expect(`{"type":"joined","room":"r","through":0}`)
	// Another process stores carol's message, then alice's first copy
	// of a-1 (the process dies before its ACK reaches her).
	ctx := context.Background()
	if _, _, err := st.Append(ctx, "r", "c-1", []byte("from carol")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Append(ctx, "r", "a-1", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	alice.Send(`{"type":"msg","id":"a-1","room":"r","body":"hello"}`)
	alice.Expect(`{"type":"deliver","room":"r","seq":1,"id":"c-1","body":"from carol"}`)
	alice.Expect(`{"type":"deliver","room":"r","seq":2,"id":"a-1","body":"hello"}`)
	alice.Expect(`{"type":"ack","id":"a-1","seq":2,"dup":true}`)
}
