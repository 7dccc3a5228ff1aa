package folder

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// TimelineFile is the name of the per-Tick timeline in a results folder.
const TimelineFile = "timeline.csv"

// TimelineRow is one Tick of the run: a row of timeline.csv.
type TimelineRow struct {
	// T is the bucket's start in seconds from the run's start.
	T float64
	// Connected is the clients connected at the bucket's end: cumulative
	// successes minus cumulative disconnects.
	Connected int64
	// Attempts and Successes are the bucket's Bucket counters.
	Attempts  uint32
	Successes uint32
	// Failures counts failed attempts by connerr.Class.
	Failures [connerr.NumClasses]uint32
	// Disconnects counts established connections that ended, any class.
	Disconnects uint32
	// MsgSent, MsgAcked and MsgDelivered are the bucket's message counts.
	MsgSent      uint32
	MsgAcked     uint32
	MsgDelivered uint32
	// RTTMeanMS and RTTMaxMS are the mean (to the µs) and largest message
	// round trip that completed in the bucket, in ms; 0 when none did.
	RTTMeanMS float64
	RTTMaxMS  float64
	// TLSFull and TLSResumed are the bucket's wss:// successes by TLS
	// handshake: full, or resumed.
	TLSFull    uint32
	TLSResumed uint32
	// Event names the events that started in the bucket ("restart abrupt";
	// several are joined by "; "), "" for none.
	Event string
}

// FailureCount is the row's failed attempts of every class.
func (r *TimelineRow) FailureCount() uint32 {
	var n uint32
	for _, f := range r.Failures {
		n += f
	}
	return n
}

// TimelineRows turns a timeline into rows, from 0 to the run's end
// (durationS seconds; the timeline's own length when longer), naming each
// event in the bucket where it started.
func TimelineRows(tl results.Timeline, events []summary.EventSummary, durationS float64) []TimelineRow {
	n := max(len(tl), int(math.Ceil(durationS/results.Tick.Seconds()-1e-9)))
	for _, e := range events {
		n = max(n, bucketOf(e.StartS)+1)
	}
	rows := make([]TimelineRow, n)
	var connected int64
	for i := range rows {
		r := &rows[i]
		r.T = (time.Duration(i) * results.Tick).Seconds()
		if i < len(tl) {
			b := &tl[i]
			r.Attempts, r.Successes, r.Failures = b.Attempts, b.Successes, b.Failures
			r.Disconnects = b.DisconnectCount()
			r.MsgSent, r.MsgAcked, r.MsgDelivered = b.MsgSent, b.MsgAcked, b.MsgDelivered
			r.TLSFull, r.TLSResumed = b.TLSFull, b.TLSResumed
			if b.RTTCount > 0 {
				r.RTTMeanMS = math.Round(float64(b.RTTSumMicros)/float64(b.RTTCount)) / 1e3
				r.RTTMaxMS = float64(b.RTTMaxMicros) / 1e3
			}
			connected += int64(b.Successes) - int64(r.Disconnects)
		}
		r.Connected = connected
	}
	for _, e := range events {
		r := &rows[bucketOf(e.StartS)]
		if r.Event != "" {
			r.Event += "; "
		}
		r.Event += summary.EventName(e)
	}
	return rows
}

// bucketOf is the timeline bucket holding s seconds; negative is 0.
func bucketOf(s float64) int {
	if s <= 0 {
		return 0
	}
	return int(time.Duration(math.Round(s*1e9)) / results.Tick)
}

// timelineHeader is timeline.csv's header; failure columns are "fail_"
// and the class name, every class but None, in connerr.Classes order.
func timelineHeader() []string {
	h := []string{"t_s", "connected", "attempts", "successes"}
	for _, c := range connerr.Classes() {
		h = append(h, "fail_"+c.String())
	}
	return append(h, "disconnects", "msg_sent", "msg_acked", "msg_delivered", "rtt_mean_ms", "rtt_max_ms", "tls_full", "tls_resumed", "event")
}

// WriteTimelineCSV writes rows as timeline.csv:
//
//	t_s,connected,attempts,successes,fail_dns,fail_refused,...,disconnects,msg_sent,msg_acked,msg_delivered,rtt_mean_ms,rtt_max_ms,tls_full,tls_resumed,event
//	3,9987,2,0,0,2,...,13,0,0,0,0,0,0,0,restart abrupt
func WriteTimelineCSV(w io.Writer, rows []TimelineRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(timelineHeader()); err != nil {
		return err
	}
	u := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	rec := make([]string, 0, len(timelineHeader()))
	for i := range rows {
		r := &rows[i]
		rec = append(rec[:0], strconv.FormatFloat(r.T, 'f', -1, 64), strconv.FormatInt(r.Connected, 10), u(r.Attempts), u(r.Successes))
		for _, c := range connerr.Classes() {
			rec = append(rec, u(r.Failures[c]))
		}
		rec = append(rec, u(r.Disconnects), u(r.MsgSent), u(r.MsgAcked), u(r.MsgDelivered), f(r.RTTMeanMS), f(r.RTTMaxMS), u(r.TLSFull), u(r.TLSResumed), r.Event)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadTimelineCSV reads a timeline.csv. Columns are found by name, so a
// file with columns added by a newer stampede still reads; a missing
// column reads as zero, except t_s, which is required.
func ReadTimelineCSV(r io.Reader) ([]TimelineRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("results: %s: header: %w", TimelineFile, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	if _, ok := col["t_s"]; !ok {
		return nil, fmt.Errorf("results: %s: no t_s column", TimelineFile)
	}
	var rows []TimelineRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("results: %s: %w", TimelineFile, err)
		}
		var row TimelineRow
		var perr error
		field := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return rec[i]
			}
			return ""
		}
		num := func(name string) uint32 {
			s := field(name)
			if s == "" || perr != nil {
				return 0
			}
			v, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				perr = fmt.Errorf("line %d: %s: %w", line, name, err)
			}
			return uint32(v)
		}
		float := func(name string) float64 {
			s := field(name)
			if s == "" || perr != nil {
				return 0
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				perr = fmt.Errorf("line %d: %s: %w", line, name, err)
			}
			return v
		}
		if row.T, err = strconv.ParseFloat(field("t_s"), 64); err != nil {
			return nil, fmt.Errorf("results: %s: line %d: t_s: %w", TimelineFile, line, err)
		}
		if s := field("connected"); s != "" {
			if row.Connected, err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, fmt.Errorf("results: %s: line %d: connected: %w", TimelineFile, line, err)
			}
		}
		row.Attempts, row.Successes = num("attempts"), num("successes")
		for _, c := range connerr.Classes() {
			row.Failures[c] = num("fail_" + c.String())
		}
		row.Disconnects = num("disconnects")
		row.MsgSent, row.MsgAcked, row.MsgDelivered = num("msg_sent"), num("msg_acked"), num("msg_delivered")
		row.RTTMeanMS, row.RTTMaxMS = float("rtt_mean_ms"), float("rtt_max_ms")
		row.TLSFull, row.TLSResumed = num("tls_full"), num("tls_resumed")
		row.Event = strings.TrimSpace(field("event"))
		if perr != nil {
			return nil, fmt.Errorf("results: %s: %w", TimelineFile, perr)
		}
		rows = append(rows, row)
	}
}
