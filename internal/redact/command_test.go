package redact

import (
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a quoted header line", `curl -H "X-Deploy-Token: T0ken" https://h/deploy`,
			`curl -H 'X-Deploy-Token: ` + Mark + `' https://h/deploy`},
		{"a header split in words", `curl -H Authorization: Bearer T0ken -d x`,
			`curl -H Authorization: ` + Mark + ` ` + Mark + ` -d x`},
		{"the word after a secret name", `echo deploying with key K3y and token T0k; sleep 0.3`,
			`echo deploying with key ` + Mark + ` and token ` + Mark + `; sleep 0.3`},
		{"a flag and its value", `deploy --password pw1 --passcode=pc1 --user bob`,
			`deploy --password ` + Mark + ` --passcode=` + Mark + ` --user bob`},
		{"an assignment", `API_KEY=abc123 ./deploy.sh`, `API_KEY=` + Mark + ` ./deploy.sh`},
		{"a URL's user info and query", `curl https://u:pw9@h/x?access_token=q1&a=1`,
			`curl https://` + Mark + `@h/x?access_token=` + Mark + `&a=1`},
		{"a quoted phrase", `echo "> X-Deploy-Token: T0ken"; echo done`,
			`echo '> X-Deploy-Token: ` + Mark + `;' echo done`},
		{"a value holding a secret word", `curl -H "X-Deploy-Token: MYTOKEN123" -d password=PASSWORD9 --token TOKEN77`,
			`curl -H 'X-Deploy-Token: ` + Mark + `' -d password=` + Mark + ` --token ` + Mark},
		{"nothing secret", `systemctl restart app`, `systemctl restart app`},
		{"unbalanced quotes", `curl -H "X-Token: T0ken`, Mark},
		{"a heredoc", "sh <<EOF\ntoken T0ken\nEOF", Mark},
		{"a trailing backslash", `echo T0ken \`, Mark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Command(tc.in, nil); got != tc.want {
				t.Errorf("Command(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCommandValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`curl -H "X-Deploy-Token: T0ken" https://u:pw9@h/`, "T0ken|pw9"},
		{`curl -H "Authorization: Bearer T0ken"`, "T0ken"},
		{`echo key K3y and token T0k`, "K3y|T0k"},
		{`curl -H "X-Deploy-Token: MYTOKEN123" --token TOKEN77`, "MYTOKEN123|TOKEN77"},
		// Unbalanced: still read word by word for its values.
		{`curl -H "X-Token: T0ken`, "T0ken"},
		{"cat <<EOF\npassword hunter2\nEOF", "hunter2"},
	} {
		got := CommandValues(tc.in, nil)
		for _, w := range strings.Split(tc.want, "|") {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("CommandValues(%q) = %q: %q missing", tc.in, got, w)
			}
		}
	}
}

func TestText(t *testing.T) {
	p := Policy{Values: []string{"s3cret"}}
	in := `store: dial "redis://user:pw9@127.0.0.1:1/0": refused; push to http://h:9091/m?token=tk1: 404 (s3cret)`
	want := `store: dial "redis://` + Mark + `@127.0.0.1:1/0": refused; push to http://h:9091/m?token=` + Mark + `: 404 (` + Mark + `)`
	if got := p.Text(in); got != want {
		t.Errorf("Text:\n got %s\nwant %s", got, want)
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate(strings.Repeat("a", 10), 4); got != "aaaa... (10 bytes)" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("é", 1); got != "... (2 bytes)" {
		t.Errorf("Truncate cut a rune: %q", got)
	}
	if got := Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
}
