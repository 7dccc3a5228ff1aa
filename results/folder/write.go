package folder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// AgentsDir is the folder of a results folder that holds each agent's own
// histogram logs, one folder per agent name (docs/fleet.md).
const AgentsDir = "agents"

// BenchFile is the index of a bench folder: its runs' policies and
// folders. A folder holding it, like one holding SummaryFile, is a
// results folder (CheckFolder).
const BenchFile = "bench.json"

// MitigationsFile is what the bench of mitigations adds to its bench
// folder: each mitigation's measured and predicted figures and their
// orders.
const MitigationsFile = "mitigations.json"

// WriteMitigations writes v, a bench of mitigations' comparison, as
// MitigationsFile in the bench folder dir.
func WriteMitigations(dir string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteBytes(filepath.Join(dir, MitigationsFile), append(b, '\n'))
}

// Folder is everything a results folder holds, for Write. Only Summary is
// required.
//
//	Summary ──> summary.json (secrets hidden: Secrets, redact.Policy)
//	Report  ──> timeline.csv, connect/ttr/message_rtt/resume .hlog
//	Agents  ──> agents/NAME/*.hlog
//	Files   ──> resources.csv, kernel.csv, haproxy.csv, http_*.csv/.hlog
//	Extra   ──> a drill's deploy.log, ... (each writes its own)
//	Render  ──> report.html, from the files above alone
type Folder struct {
	// Summary is written as summary.json.
	Summary *summary.Summary
	// Report, when not nil, is written as timeline.csv and the
	// HdrHistogram logs of a WebSocket fleet, over Summary.DurationS.
	Report *results.Report
	// Agents are each agent's own report, written beside the merged one
	// (their merge is Report), by agent name.
	Agents map[string]*results.Report
	// Files are more files of the folder, written in order.
	Files []File
	// Extra are writers of their own files (a run's sidecars), called
	// after Files and before Render.
	Extra []FilesWriter
	// Secrets names the run's own secrets (its --secret-header names, the
	// values of its secret headers and URLs) to hide from summary.json
	// besides those every text hides.
	Secrets redact.Policy
	// Render writes the folder's report from its files (report.Render);
	// nil writes none. Package results does not draw.
	Render func(dir string) error
}

// File is one file of a results folder.
type File struct {
	// Name is the file's name in the folder (ResourcesFile).
	Name string
	// Write writes its content.
	Write func(w io.Writer) error
}

// A FilesWriter writes files of its own into a results folder.
type FilesWriter interface {
	WriteFiles(dir string) error
}

// Write writes the results folder dir of one run (real, simulated or an
// HTTP fleet's) from f: see Folder. The folder is DirMode from the start
// (MakeDir) and every file FileMode from its creation (WriteFile), so
// nobody else can open what is written into it meanwhile; nothing else in
// it is touched.
func Write(dir string, f Folder) (err error) {
	if f.Summary == nil {
		return errors.New("results: Write: no Summary")
	}
	if err := MakeDir(dir); err != nil {
		return err
	}
	if err := writeSummary(dir, f.Summary, f.Secrets); err != nil {
		return err
	}
	length := time.Duration(f.Summary.DurationS * float64(time.Second))
	if f.Report != nil {
		if err := WriteFile(filepath.Join(dir, TimelineFile), func(w io.Writer) error {
			return WriteTimelineCSV(w, TimelineRows(f.Report.Timeline, f.Summary.Events, f.Summary.DurationS))
		}); err != nil {
			return err
		}
		if err := WriteHistogramLogs(dir, f.Report, length); err != nil {
			return err
		}
	}
	for name, r := range f.Agents {
		sub := filepath.Join(dir, AgentsDir, safeName(name))
		if err := MakeDir(sub); err != nil {
			return err
		}
		if err := WriteHistogramLogs(sub, r, length); err != nil {
			return err
		}
	}
	for _, file := range f.Files {
		if err := WriteFile(filepath.Join(dir, file.Name), file.Write); err != nil {
			return err
		}
	}
	for _, x := range f.Extra {
		if err := x.WriteFiles(dir); err != nil {
			return err
		}
	}
	if f.Render != nil {
		return f.Render(dir)
	}
	return nil
}

// PolicyDir is the folder of the i-th run (from 0) of a comparison of
// policies, inside the comparison's folder: "1-exp_initial-1s_max-60s".
// The bench and the HTTP fleet's --policies name their runs' folders
// alike, in the order they ran.
func PolicyDir(i int, spec string) string {
	r := strings.NewReplacer(":", "_", ",", "_", "=", "-", "/", "-", " ", "")
	return safeName(fmt.Sprintf("%d-%s", i+1, r.Replace(spec)))
}

// safeName is name as one path element.
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '/' || c == 0 || c == '\\' {
			b[i] = '_'
		}
	}
	if s := string(b); s != "" && s != "." && s != ".." {
		return s
	}
	return "_"
}

// ErrFolderExists is CheckFolder's error for a folder that holds a run's
// results already.
var ErrFolderExists = errors.New("holds a results folder already")

// CheckFolder makes sure dir can be a new results folder, before a run
// starts. A folder that exists must be the user's own, writable by nobody
// else (ErrShared), and either empty (as one from mktemp -d) or a results
// folder already (SummaryFile or BenchFile): any other is refused
// (ErrNotResults), so that nothing of it is overwritten or changed. A
// results folder is refused too unless overwrite, with an error wrapping
// ErrFolderExists that names the file found. It must be possible to
// create dir and write into it; the file system is left as it was found:
// what the check created it removes.
func CheckFolder(dir string, overwrite bool) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if err := checkOwn(dir, fi); err != nil {
			return err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			name, ok := isResults(dir)
			if !ok {
				return fmt.Errorf("%s %w", dir, ErrNotResults)
			}
			if !overwrite {
				return fmt.Errorf("%s %w (%s)", dir, ErrFolderExists, name)
			}
		}
	}
	return checkWritable(dir)
}

// CheckFile makes sure a file can be written at path (a report page, a
// JUnit file) before the work that produces it starts: path is not a
// folder, and its folder exists or can be created, and takes a new file.
// The file system is left as it was found.
func CheckFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder; give a file name", path)
	}
	return checkWritable(filepath.Dir(path))
}

// checkWritable makes sure dir exists or can be created, and takes a new
// file; what it created it removes. A file where a folder has to be is
// said in those words, not as mkdir's "not a directory".
func checkWritable(dir string) error {
	var missing []string // deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("%s is a file, not a folder", d)
		}
		if err == nil || filepath.Dir(d) == d {
			break
		}
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, d)
		} // else under a file (ENOTDIR), or unreadable: look further up
	}
	defer func() {
		for _, d := range missing {
			os.Remove(d)
		}
	}()
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".stampede-check-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
