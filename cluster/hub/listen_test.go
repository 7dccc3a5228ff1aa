package hub

import (
	"path/filepath"
	"strings"
	"testing"
)

// A listen address beyond loopback needs TLS, or InsecureListen.
func TestClearListen(t *testing.T) {
	for _, tt := range []struct {
		listen        string
		tls, insecure bool
		ok            bool
	}{
		{"127.0.0.1:4250", false, false, true},
		{"[::1]:4250", false, false, true},
		{"localhost:4250", false, false, true},
		{"0.0.0.0:4222", false, false, false}, // every address
		{":4222", false, false, false},        // every address too
		{"10.0.0.1:4250", false, false, false},
		{"10.0.0.1:4250", true, false, true},
		{"10.0.0.1:4250", false, true, true},
	} {
		err := ClearListen(tt.listen, tt.tls, tt.insecure)
		if (err == nil) != tt.ok {
			t.Errorf("ClearListen(%q, tls %v, insecure %v) = %v, want ok %v", tt.listen, tt.tls, tt.insecure, err, tt.ok)
		}
	}
}

// New refuses such an address before its server opens any socket.
func TestNewRefusesClearListen(t *testing.T) {
	_, err := New(Config{Listen: "0.0.0.0:0", TokenFile: filepath.Join(t.TempDir(), "token")})
	if err == nil || !strings.Contains(err.Error(), "InsecureListen") {
		t.Fatalf("New with Listen 0.0.0.0:0 and no TLS = %v, want refused", err)
	}
}
