package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrinter feeds events recorded from go test -json (go 1.26): a
// package with a failed test, a skipped test and a skipped subtest, a
// package that failed to build, one whose init panicked, one without
// test files, one that passed, one that timed out (the panic is the
// running test's, which never ends), and non-JSON lines.
func TestPrinter(t *testing.T) {
	f, err := os.Open("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	p := newPrinter(&out)
	s := bufio.NewScanner(f)
	for s.Scan() {
		p.handle(append(s.Bytes(), '\n'))
	}
	p.summary()
	want := `# tiny/b [tiny/b.test]
b/b_test.go:5:32: undefined: undefined
-test.shuffle 1796198905976250564
=== RUN   TestFail
stdout line
    a_test.go:7: boom
--- FAIL: TestFail (0.00s)
FAIL
FAIL	tiny/a	0.019s
FAIL	tiny/b [build failed]
panic: init boom

goroutine 1 [running]:
tiny/f.init.0()
	/tmp/tiny/f/f_test.go:5 +0x25
FAIL	tiny/f	0.052s
?   	tiny/d	[no test files]
ok  	tiny/e	0.020s
=== RUN   TestHang
    h_test.go:5: hanging
panic: test timed out after 2s

tiny/h.TestHang(0x3d4ba0854248?)
FAIL	tiny/h	2.027s
# tiny/g
g/g_test.go:5:42: a non-JSON line, as an older go printed build errors
skipped: 2 tests
tiny/a TestSub/x: a_test.go:10: sub skip 1
tiny/a TestSkip: a_test.go:8: no widget here
`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// One failed test and four failed packages.
	if p.failed != 5 {
		t.Errorf("failed = %d, want 5", p.failed)
	}
}

// TestPrinterUnfinished: a package whose events stop (go test was killed)
// is printed as failed, the running test's output included.
func TestPrinterUnfinished(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out)
	for _, l := range []string{
		`{"Action":"start","Package":"x"}`,
		`{"Action":"output","Package":"x","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"pass","Package":"x","Test":"TestOK"}`,
		`{"Action":"run","Package":"x","Test":"TestHang"}`,
		`{"Action":"output","Package":"x","Test":"TestHang","Output":"=== RUN   TestHang\n"}`,
		`{"Action":"output","Package":"x","Test":"TestHang","Output":"    x_test.go:3: waiting\n"}`,
	} {
		p.handle([]byte(l + "\n"))
	}
	p.summary()
	want := "testlog: x did not finish\n=== RUN   TestHang\n    x_test.go:3: waiting\nskipped: 0 tests\n"
	if got := out.String(); got != want || p.failed != 1 {
		t.Errorf("failed %d, got:\n%s\nwant:\n%s", p.failed, got, want)
	}
}

// TestRun runs the real go test on a module of three tests, one of which
// passes, one fails and one skips.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module tiny\n\ngo 1.21\n")
	write("tiny_test.go", `package tiny

import "testing"

func TestPass(t *testing.T) { t.Log("quiet") }
func TestFail(t *testing.T) { t.Error("boom") }
func TestSkip(t *testing.T) { t.Skip("no widget") }
`)
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOTOOLCHAIN", "local")
	var out, errs bytes.Buffer
	code := run(dir, []string{"-count=1", "-timeout=1m", "./..."}, &out, &errs)
	got := out.String()
	for _, want := range []string{
		"    tiny_test.go:6: boom\n--- FAIL: TestFail",
		"FAIL\ttiny\t",
		"skipped: 1 tests\ntiny TestSkip: tiny_test.go:7: no widget\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") {
		t.Errorf("a passed test's output is printed:\n%s", got)
	}
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr:\n%s", code, errs.String())
	}
}
