package loadgen

import (
	"time"

	"github.com/stampede-dev/stampede/results"
)

// Recording of the stampede mode, beside the recorder's own methods.

// acked records a message ACKed at offset at, rtt after it was last sent
// and fromDue after it was first scheduled to be sent.
func (r *recorder) acked(at int64, rtt, fromDue time.Duration) {
	b := r.rep.Timeline.At(time.Duration(at))
	b.MsgAcked++
	b.RecordRTT(rtt)
	r.rep.Messages.Acked++
	results.RecordLatency(r.rep.RTT, rtt)
	results.RecordLatency(r.rep.RTTScheduled, max(fromDue, rtt))
	r.cnt.msgAcked.Add(1)
}

// retried records a message resent after a reconnect.
func (r *recorder) retried() { r.rep.Messages.Retried++ }

// resumed records a resume answered d after it was sent.
func (r *recorder) resumed(d time.Duration) {
	r.rep.Messages.Resumed++
	results.RecordLatency(r.rep.Resume, d)
}
