package argvsecret

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

// TestHideArgSecretsEverywhere: every URL argument (a flag's value or the
// http command's own) loses its user info and secret query values, a
// --data body its secret fields, and --restart-cmd its whole text.
func TestHideArgSecretsEverywhere(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"store password parameter", "stampede run --store redis://127.0.0.1:6379/0?password=pw1&db=2",
			"stampede run --store redis://127.0.0.1:6379/0?password=***&db=2"},
		{"store user info, = form", "stampede run --store=postgres://u:pw2@127.0.0.1:5432/test",
			"stampede run --store=postgres://*****@127.0.0.1:5432/test"},
		{"http URL, query and user info", "stampede http http://a:b@127.0.0.1:1/x?access_token=tok&page=2#f",
			"stampede http http://***@127.0.0.1:1/x?access_token=***&page=2#f"},
		{"query named by --secret-header", "stampede loadgen --secret-header sid --url ws://127.0.0.1:1/?sid=abc&x=1",
			"stampede loadgen --secret-header sid --url ws://127.0.0.1:1/?sid=***&x=1"},
		{"restart command", "stampede drill --restart-cmd ./deploy.sh --at 1s",
			"stampede drill --restart-cmd *********** --at 1s"},
		{"JSON body", `stampede http --data {"user":"u","password":"p\"w","n":1} http://127.0.0.1:1/`,
			`stampede http --data {"user":"u","password":"****","n":1} http://127.0.0.1:1/`},
		{"form body", "stampede http --data=a=1&client_secret=s3&b=2 http://127.0.0.1:1/",
			"stampede http --data=a=1&client_secret=**&b=2 http://127.0.0.1:1/"},
		{"JSON body, nested", `stampede http --data {"api_keys":["K1","K2"],"password":{"value":"P1"},"user":"u"} http://127.0.0.1:1/`,
			`stampede http --data {"api_keys":["**","**"],"password":{"value":"**"},"user":"u"} http://127.0.0.1:1/`},
		{"store, a '/' in the password", "stampede run --store redis://u:p/w@127.0.0.1:1/0",
			"stampede run --store redis://*****@127.0.0.1:1/0"},
		{"store, a key=value string", "stampede run --store host=h~password=pw3~dbname=d",
			"stampede run --store host=h password=*** dbname=d"},
		{"nothing secret", "stampede http --data @body.json http://127.0.0.1:1/?page=2",
			"stampede http --data @body.json http://127.0.0.1:1/?page=2"},
	} {
		// '~' stands for a space inside one argument.
		args := cloneArgs(strings.Fields(tc.in))
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "~", " ")
		}
		hideArgSecrets(args)
		if got := strings.Join(args, " "); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
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
