package folder

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// sideFile is a FilesWriter that writes one file, as a run's sidecars
// do: through WriteBytes.
type sideFile string

func (s sideFile) WriteFiles(dir string) error {
	return WriteBytes(filepath.Join(dir, string(s)), []byte("side\n"))
}

// TestWrite: one folder holds what Folder names, the folder and its
// agents' subfolders 0700 and every file 0600 under a permissive umask
// (a sidecar's and the render hook's files too), and summary.json hides
// the config's secrets and the run's own secret values.
func TestWrite(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	start := time.Unix(1_700_000_000, 0)
	rep := results.NewReport(start, 2)
	config := map[string]any{
		"url":    "wss://bob:pw1@127.0.0.1:9/ws?access_token=tok2&room=1",
		"header": map[string][]string{"Authorization": {"Bearer tok3"}, "X-Sess": {"tok4"}},
		"store":  "postgres://u:pw5@127.0.0.1:5432/test",
		"note":   "tok4 again",
	}
	sum := summary.Summarize(summary.Input{RunID: "r", Config: config, Report: rep, End: time.Second})
	dir := filepath.Join(t.TempDir(), "out")
	rendered := false
	err := Write(dir, Folder{
		Summary: sum,
		Report:  rep,
		Agents:  map[string]*results.Report{"loadgen 0": rep, "../x": rep},
		Files:   []File{{Name: results.ResourcesFile, Write: func(w io.Writer) error { _, err := io.WriteString(w, "t\n"); return err }}},
		Extra:   []FilesWriter{sideFile("deploy.log")},
		Secrets: redact.Policy{Headers: []string{"X-Sess"}, Values: []string{"tok4"}},
		Render: func(d string) error {
			rendered = true
			return WriteBytes(filepath.Join(d, "report.html"), []byte("<html>"))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rendered {
		t.Error("the render hook was not called")
	}
	var files []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		st, _ := d.Info()
		want := FileMode
		if d.IsDir() {
			want = DirMode
		} else {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, rel)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
		return nil
	})
	for _, f := range []string{SummaryFile, TimelineFile, results.ConnectLogFile, results.ResourcesFile, "deploy.log", "report.html",
		filepath.Join(AgentsDir, "loadgen 0", results.ConnectLogFile), filepath.Join(AgentsDir, ".._x", results.ConnectLogFile)} {
		if !slices.Contains(files, f) {
			t.Errorf("no %s in %v", f, files)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"bob", "pw1", "tok2", "tok3", "tok4", "pw5"} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("summary.json holds %q:\n%s", s, b)
		}
	}
	if !bytes.Contains(b, []byte("room=1")) || !bytes.Contains(b, []byte(`"note": "<redacted> again"`)) {
		t.Errorf("summary.json lost what is not secret:\n%s", b)
	}
	if _, err := ReadSummary(filepath.Join(dir, SummaryFile)); err != nil {
		t.Error(err)
	}
}

// TestWriteExistingFolder: an existing world-readable folder is made
// private too.
func TestWriteExistingFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, Folder{Summary: summary.Summarize(summary.Input{})}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != DirMode {
		t.Errorf("folder mode %v, want %v", st.Mode().Perm(), DirMode)
	}
}

// TestCheckFolder: a folder holding a summary or a bench index is refused
// unless overwrite; a new one is fine and not left behind.
func TestCheckFolder(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	if err := CheckFolder(fresh, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckFolder left %s/a behind", base)
	}
	for _, name := range []string{SummaryFile, BenchFile} {
		dir := filepath.Join(base, strings.TrimSuffix(name, ".json"))
		os.Mkdir(dir, 0o700)
		os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600)
		err := CheckFolder(dir, false)
		if !errors.Is(err, ErrFolderExists) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want ErrFolderExists naming it", name, err)
		}
		if err := CheckFolder(dir, true); err != nil {
			t.Errorf("%s, overwrite: %v", name, err)
		}
	}
	// An empty folder that exists is no results folder.
	if err := CheckFolder(t.TempDir(), false); err != nil {
		t.Error(err)
	}
}

// TestHTTPTimelineRoundTrip: ReadHTTPTimelineCSV reads what WriteCSV
// wrote, and refuses what it did not.
func TestHTTPTimelineRoundTrip(t *testing.T) {
	var tl results.HTTPTimeline
	tl.Add(0, 200)
	tl.Add(50*time.Millisecond, 429)
	tl.Add(250*time.Millisecond, 0)
	tl.Add(260*time.Millisecond, 503)
	tl.Add(270*time.Millisecond, 404)
	var b bytes.Buffer
	if err := tl.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadHTTPTimelineCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Buckets, tl.Buckets) {
		t.Errorf("read %+v, wrote %+v", got.Buckets, tl.Buckets)
	}
	// A folder written with t_ms (milliseconds) reads the same.
	legacy := "t_ms,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\n0,2,1,1,0,0,0\n200,4,0,0,2,1,1\n"
	if old, err := results.ReadHTTPTimelineCSV(strings.NewReader(legacy)); err != nil || len(old.Buckets) != 3 || old.Buckets[2].Attempts != 4 {
		t.Errorf("t_ms timeline: %+v, %v", old, err)
	}
	for _, bad := range []string{"", "t_s,attempts\n", "t_s,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\n0.15,1,1,0,0,0,0\n",
		"t_s,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\nNaN,1,1,0,0,0,0\n", "t_ms,attempts\n", "t_ms,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\n150,1,1,0,0,0,0\n",
		"t_ms,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\n0,x,1,0,0,0,0\n"} {
		if _, err := results.ReadHTTPTimelineCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCheckFile: a file can be written where its folder exists or can be
// made; under a regular file, or at a folder, it cannot, said plainly.
// Nothing is left behind.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{filepath.Join(dir, "x.html"), filepath.Join(dir, "new", "deeper", "x.xml"), file} {
		if err := CheckFile(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("the check left %s behind", filepath.Join(dir, "new"))
	}
	for path, want := range map[string]string{
		filepath.Join(file, "x.html"):       file + " is a file, not a folder",
		filepath.Join(file, "sub", "x.xml"): file + " is a file, not a folder",
		dir:                                 dir + " is a folder; give a file name",
	} {
		if err := CheckFile(path); err == nil || err.Error() != want {
			t.Errorf("%s: %v; want %q", path, err, want)
		}
	}
	if err := CheckFolder(filepath.Join(file, "out"), false); err == nil || err.Error() != file+" is a file, not a folder" {
		t.Errorf("CheckFolder under a file: %v", err)
	}
}
