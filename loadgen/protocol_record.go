package loadgen

import (
	"time"

	"github.com/stampede-dev/stampede/results"
)

// Recording of the stampede mode, beside the recorder's own methods.

// acked records a message ACKed at offset at, rtt after it was last sent
// and fromDue after it was first scheduled to be sent.
func (r *recorder) acked(at int64, rtt, fromDue time.Duration) {
	r.mu.Lock()
	b := r.st.At(time.Duration(at))
	b.MsgAcked++
	b.RecordRTT(rtt)
	r.rep.Messages.Acked++
	r.st.Record(results.DistRTT, time.Duration(at), rtt)
	r.st.Record(results.DistRTTScheduled, time.Duration(at), max(fromDue, rtt))
	r.mu.Unlock()
	r.cnt.msgAcked.Add(1)
}

// retried records a message resent after a reconnect.
func (r *recorder) retried() { r.tally(func(m *results.Messages) { m.Retried++ }) }

// resumed records a resume answered at offset at, d after it was sent.
func (r *recorder) resumed(at int64, d time.Duration) {
	r.mu.Lock()
	r.rep.Messages.Resumed++
	r.st.Record(results.DistResume, time.Duration(at), d)
	r.mu.Unlock()
}
