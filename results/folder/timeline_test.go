package folder

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/internal/resultstest"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results/summary"
)

func TestTimelineRows(t *testing.T) {
	tl := resultstest.Timeline(
		resultstest.Tick{I: 0, Attempts: 3, Succ: 2, Refused: 1},
		resultstest.Tick{I: 2, Closed1006: 2},
		resultstest.Tick{I: 3, Attempts: 2, Succ: 1, Timeout: 1},
	)
	tl[3].MsgSent, tl[3].MsgAcked, tl[3].MsgDelivered = 5, 4, 3
	tl[3].RTTCount, tl[3].RTTSumMicros, tl[3].RTTMaxMicros = 3, 1000, 500 // mean 333.33 µs
	events := []summary.EventSummary{
		{Kind: "restart", Mode: "abrupt", StartS: 0.2},
		{Kind: "backlog", StartS: 0.25},
		{Kind: "outage", StartS: 0.7, Detected: true}, // past the timeline: it grows
	}
	rows := TimelineRows(tl, events, 0.5)
	want := []TimelineRow{
		{T: 0, Connected: 2, Attempts: 3, Successes: 2},
		{T: 0.1, Connected: 2},
		{T: 0.2, Connected: 0, Disconnects: 2, Event: "restart abrupt; backlog"},
		{T: 0.3, Connected: 1, Attempts: 2, Successes: 1, MsgSent: 5, MsgAcked: 4, MsgDelivered: 3, RTTMeanMS: 0.333, RTTMaxMS: 0.5},
		{T: 0.4, Connected: 1},
		{T: 0.5, Connected: 1},
		{T: 0.6, Connected: 1},
		{T: 0.7, Connected: 1, Event: "outage (detected)"},
	}
	want[0].Failures[connerr.Refused] = 1
	want[3].Failures[connerr.Timeout] = 1
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%+v\nwant\n%+v", rows, want)
	}
	if n := len(TimelineRows(tl, nil, 1)); n != 10 {
		t.Errorf("1 s run: %d rows, want 10", n)
	}
	if n := rows[0].FailureCount(); n != 1 {
		t.Errorf("FailureCount = %d", n)
	}
}

func TestTimelineCSV(t *testing.T) {
	rows := []TimelineRow{
		{T: 0, Connected: 2, Attempts: 3, Successes: 2},
		{T: 0.1, Connected: 0, Disconnects: 2, MsgSent: 1, MsgAcked: 1, MsgDelivered: 1, RTTMeanMS: 200.125, RTTMaxMS: 250, TLSFull: 3, TLSResumed: 4, Event: "restart abrupt; stall"},
	}
	rows[0].Failures[connerr.Refused] = 1
	rows[1].Failures[connerr.HandshakeTimeout] = 7
	var b bytes.Buffer
	if err := WriteTimelineCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "t_s,connected,attempts,successes,fail_dns,fail_refused,fail_timeout,fail_reset,fail_tls,fail_handshake_4xx," +
		"fail_handshake_5xx,fail_handshake_timeout,fail_closed_1006,fail_closed_1001,fail_protocol,fail_local,fail_ping_timeout," +
		"fail_closed_1012,fail_closed_1013,fail_http_502,fail_http_503,fail_http_504," +
		"fail_session_auth,fail_session_refused,fail_session_4429,fail_session_error,fail_heartbeat_timeout,fail_session_timeout," +
		"disconnects,msg_sent,msg_acked,msg_delivered,rtt_mean_ms,rtt_max_ms,tls_full,tls_resumed,event\n" +
		"0,2,3,2,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n" +
		"0.1,0,0,0,0,0,0,0,0,0,0,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2,1,1,1,200.125,250,3,4,restart abrupt; stall\n"
	if b.String() != want {
		t.Errorf("timeline.csv:\n%s\nwant\n%s", b.String(), want)
	}
	got, err := ReadTimelineCSV(&b)
	if err != nil || !reflect.DeepEqual(got, rows) {
		t.Errorf("read back %+v, %v\nwant %+v", got, err, rows)
	}
}

func TestReadTimelineCSVTolerant(t *testing.T) {
	// Reordered and unknown columns, missing ones read as zero.
	got, err := ReadTimelineCSV(strings.NewReader("extra,attempts,t_s,fail_refused\nx,4,0.5,2\n"))
	want := []TimelineRow{{T: 0.5, Attempts: 4}}
	want[0].Failures[connerr.Refused] = 2
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "attempts\n1\n", "t_s,attempts\n0,x\n", "t_s\nzero\n", "t_s,connected\n0,1.5\n", "t_s,rtt_max_ms\n0,slow\n"} {
		if _, err := ReadTimelineCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadTimelineCSV(%q) succeeded", bad)
		}
	}
}
