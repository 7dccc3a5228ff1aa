package storm

import "testing"

func TestURLPort(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want uint16
	}{
		{"ws://127.0.0.1:7001/", 7001},
		{"wss://[::1]:9443/x", 9443},
		{"ws://localhost/", 80},
		{"wss://localhost/", 443},
		{"ws://127.0.0.1:99999/", 0},
		{"::", 0},
	} {
		if got := urlPort(tc.url); got != tc.want {
			t.Errorf("urlPort(%q) = %d, want %d", tc.url, got, tc.want)
		}
	}
}
