package main

import (
	"strings"
	"testing"
)

// TestHideArgSecrets: the values of secret headers and the URL's user info
// are overwritten in place, every other argument is left alone.
func TestHideArgSecrets(t *testing.T) {
	in := []string{"stampede", "drill", "--url", "wss://bob:pa55@127.0.0.1:9/ws", "--header", "Authorization: Bearer s3cr3t",
		"-H=Cookie: a=1", "--header", "X-Trace: visible", "--secret-header", "X-Api-Key", "-H", "x-api-key: k3y", "--clients", "5"}
	args := cloneArgs(in) // heap strings: writable, as argv is
	hideArgSecrets(args)
	got := strings.Join(args, " ")
	want := "stampede drill --url wss://********@127.0.0.1:9/ws --header Authorization:************** " +
		"-H=Cookie:**** --header X-Trace: visible --secret-header X-Api-Key -H x-api-key:**** --clients 5"
	if got != want {
		t.Errorf("hidden:\n%s\nwant\n%s", got, want)
	}
}

// TestHideArgSecretsOTLP: every --otlp-header value and the user info of
// --otlp-endpoint are overwritten; the header's name stays.
func TestHideArgSecretsOTLP(t *testing.T) {
	in := []string{"stampede", "run", "--otlp-header", "X-Team=t34m", "--otlp-header=Authorization=Bearer x",
		"--otlp-endpoint", "https://u:pw@otel.example:4318", "--otlp-interval", "5s"}
	args := cloneArgs(in)
	hideArgSecrets(args)
	got := strings.Join(args, " ")
	want := "stampede run --otlp-header X-Team=**** --otlp-header=Authorization=******** " +
		"--otlp-endpoint https://****@otel.example:4318 --otlp-interval 5s"
	if got != want {
		t.Errorf("hidden:\n%s\nwant\n%s", got, want)
	}
}
