package summary

import "testing"

// TestEventName: kind and mode, "(detected)" for an inferred outage, and
// a drill's backend event names its backend.
func TestEventName(t *testing.T) {
	for _, tc := range []struct {
		e    EventSummary
		want string
	}{
		{EventSummary{Kind: "restart", Mode: "abrupt", Spec: "at 5s restart abrupt"}, "restart abrupt"},
		{EventSummary{Kind: "outage", Detected: true}, "outage (detected)"},
		{EventSummary{Kind: "backend", Mode: "restart", Spec: "s2"}, "backend s2 restart"},
		{EventSummary{Kind: "deploy", Mode: "command", Spec: "scripts/rolling-deploy.sh /tmp/lb"}, "deploy command"},
	} {
		if got := EventName(tc.e); got != tc.want {
			t.Errorf("EventName(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}
