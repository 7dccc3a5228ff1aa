package redact

import (
	"net/http"
	"strings"
	"testing"
)

func TestHeader(t *testing.T) {
	h := http.Header{
		"Authorization": {"Bearer s3cr3t"},
		"Cookie":        {"a=1", "b=2"},
		"X-Api-Key":     {"k3y"},
		"X-Trace":       {"visible"},
	}
	got := Header(h, []string{"x-api-key"})
	for k, want := range map[string][]string{
		"Authorization": {Mark}, "Cookie": {Mark, Mark}, "X-Api-Key": {Mark}, "X-Trace": {"visible"},
	} {
		if strings.Join(got[k], ",") != strings.Join(want, ",") {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if h.Get("Authorization") != "Bearer s3cr3t" {
		t.Error("Header changed its argument")
	}
	if Header(nil, nil) != nil {
		t.Error("Header(nil) is not nil")
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"wss://user:pa55@staging.example:8443/ws?x=1", "wss://" + Mark + "@staging.example:8443/ws?x=1"},
		{"redis://:pa55@127.0.0.1:6379/0", "redis://" + Mark + "@127.0.0.1:6379/0"},
		{"ws://127.0.0.1:8080/ws", "ws://127.0.0.1:8080/ws"},
		// Does not parse, and may hold user info: hidden whole.
		{"ws://us er:p@ss@%zz/", Mark},
		// Query parameters named like a secret, in any case, as a part
		// of the name; the others kept as written, in order.
		{"https://h/p?access_token=s3cr3t&x=1", "https://h/p?access_token=" + Mark + "&x=1"},
		{"https://h/?API_KEY=k&Signature=s&page=2", "https://h/?API_KEY=" + Mark + "&Signature=" + Mark + "&page=2"},
		{"nats://127.0.0.1:4222?password=pw", "nats://127.0.0.1:4222?password=" + Mark},
		{"postgres://u:pw@127.0.0.1:5432/test?sslmode=disable", "postgres://" + Mark + "@127.0.0.1:5432/test?sslmode=disable"},
		{"https://h/?q=tokenless", "https://h/?q=tokenless"},
		// Redacted twice is redacted once: a mark already there stays.
		{"redis://" + Mark + "@127.0.0.1:6379/0", "redis://" + Mark + "@127.0.0.1:6379/0"},
		{"https://h/?token=" + Mark, "https://h/?token=" + Mark},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValuesScrub(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer s3cr3t"}, "X-Trace": {"visible"}}
	vals := Values(h, nil, "wss://bob:pa55@host/")
	s := Scrub("auth Bearer s3cr3t for bob with pa55, trace visible", vals)
	if strings.Contains(s, "s3cr3t") || strings.Contains(s, "pa55") || strings.Contains(s, "bob") || !strings.Contains(s, "visible") {
		t.Errorf("Scrub: %q", s)
	}
}

func TestURLWith(t *testing.T) {
	// A parameter the user named secret, though no word says so.
	if got := URLWith("https://h/?sid=abc&x=1", []string{"SID"}); got != "https://h/?sid="+Mark+"&x=1" {
		t.Errorf("URLWith: %q", got)
	}
}

func TestSecretNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret bool
	}{
		{"Authorization", true}, {"cookie", true}, {"Proxy-Authorization", true},
		{"X-Api-Key", true}, {"X-Auth-Token", true}, {"client_secret", true},
		{"X-Trace", false}, {"Accept", false}, {"Host", false},
		{"Idempotency-Key", false}, // names a request, not a credential
	} {
		if got := IsSecretHeader(tc.name, nil); got != tc.secret {
			t.Errorf("IsSecretHeader(%q) = %v, want %v", tc.name, got, tc.secret)
		}
	}
	if !IsSecretHeader("X-Session", []string{"x-session"}) {
		t.Error("a header the user named secret is not")
	}
	// Words is the extension point: a word added makes names secret.
	defer func(w []string) { Words = w }(Words)
	Words = append(Words, "session")
	if !IsSecretName("X-Session-Id") {
		t.Error("Words extended: X-Session-Id is not secret")
	}
}

func TestHeaderLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Authorization: Bearer s3cr3t", "Authorization: " + Mark},
		{"x-api-key:k", "x-api-key: " + Mark},
		{"Accept: text/plain", "Accept: text/plain"},
		{"https://h/?a=b", "https://h/?a=b"}, // not a header line
		{"no colon", "no colon"},
	} {
		if got := HeaderLine(tc.in, nil); got != tc.want {
			t.Errorf("HeaderLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPolicyJSON(t *testing.T) {
	in := `{"url":"https://u:pw@h/?access_token=t0k&x=1","header":{"Authorization":["Bearer s3cr3t"],"Accept":["*/*"]},` +
		`"headers":["Cookie: a=b","X-Trace: 1"],"store":"redis://:pw@127.0.0.1:6379/0","password":"hunter2",` +
		`"api_key_count":3,"retry":{"seed":1,"x":null,"ok":true},"note":"said s3cr3t twice",` +
		`"secret_headers":["X-Sess"],"token_file":"/run/token","idempotency_key":"auto"}`
	p := Policy{Values: []string{"s3cr3t"}}
	out, err := p.JSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"url":"https://<redacted>@h/?access_token=<redacted>&x=1","header":{"Authorization":["<redacted>"],"Accept":["*/*"]},` +
		`"headers":["Cookie: <redacted>","X-Trace: 1"],"store":"redis://<redacted>@127.0.0.1:6379/0","password":"<redacted>",` +
		`"api_key_count":3,"retry":{"seed":1,"x":null,"ok":true},"note":"said <redacted> twice",` +
		`"secret_headers":["X-Sess"],"token_file":"/run/token","idempotency_key":"auto"}`
	if string(out) != want {
		t.Errorf("JSON:\n got %s\nwant %s", out, want)
	}
	if _, err := p.JSON([]byte(`{"a":`)); err == nil {
		t.Error("JSON of a truncated text: no error")
	}
}

// TestBody: a JSON body loses the values under secret keys, a form body
// its secret fields; a body with none is unchanged, a broken JSON one is
// hidden whole.
func TestBody(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"user":"u","password":"p","n":1}`, `{"user":"u","password":"<redacted>","n":1}`},
		{`{"auth":{"client_secret":"s"},"x":["a"]}`, `{"auth":{"client_secret":"<redacted>"},"x":["a"]}`},
		{"a=1&client_secret=s3&b=2", "a=1&client_secret=<redacted>&b=2"},
		{"sid=abc&x=1", "sid=abc&x=1"},
		{"plain text, no fields", "plain text, no fields"},
		{`{"password": "p"`, "<redacted>"},
	} {
		if got := Body(tc.in, nil); got != tc.want {
			t.Errorf("Body(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Body("sid=abc&x=1", []string{"SID"}); got != "sid=<redacted>&x=1" {
		t.Errorf("a field named by extra: %q", got)
	}
}

// TestValuesSkipShort: a user name of one or two letters is not scrubbed
// everywhere.
func TestValuesSkipShort(t *testing.T) {
	v := Values(nil, nil, "ws://u:longer-secret@127.0.0.1/")
	if len(v) != 1 || v[0] != "longer-secret" {
		t.Errorf("Values = %q, want only the password", v)
	}
}
