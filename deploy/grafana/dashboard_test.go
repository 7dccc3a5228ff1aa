package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dsVar is the datasource every panel, target, variable and annotation
// must name, so an import picks the Prometheus.
const dsVar = "${DS_PROMETHEUS}"

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []target    `json:"targets"`
}

type dashboard struct {
	SchemaVersion int     `json:"schemaVersion"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string      `json:"name"`
			Type       string      `json:"type"`
			Query      any         `json:"query"`
			Definition string      `json:"definition"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string      `json:"name"`
			BuiltIn    int         `json:"builtIn"`
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("stampede.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("stampede.json: %v", err)
	}
	return d
}

// query is one PromQL expression of the dashboard and where it is.
type query struct{ where, expr string }

// queries lists every panel target's expression and every Prometheus
// annotation's.
func (d dashboard) queries() []query {
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			qs = append(qs, query{fmt.Sprintf("annotation %q", a.Name), a.Expr})
		}
	}
	return qs
}

// TestDashboardSchema: the dashboard is JSON Grafana imports with a current
// schema, and every query goes to the datasource variable, not to a
// datasource of the machine it was drawn on.
func TestDashboardSchema(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later (Grafana 9+)", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both set", d.UID, d.Title)
	}
	hasVar := false
	for _, v := range d.Templating.List {
		if v.Name == "DS_PROMETHEUS" {
			hasVar = v.Type == "datasource" && v.Query == "prometheus"
			continue
		}
		if v.Datasource == nil || v.Datasource.UID != dsVar {
			t.Errorf("variable %q: datasource %+v, want uid %s", v.Name, v.Datasource, dsVar)
		}
	}
	if !hasVar {
		t.Errorf("templating: no datasource variable DS_PROMETHEUS of type prometheus")
	}
	panels := 0
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		panels++
		if p.Datasource == nil || p.Datasource.UID != dsVar || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want prometheus %s", p.Title, p.Datasource, dsVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no targets", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != dsVar {
				t.Errorf("panel %q target %s: datasource %+v, want %s", p.Title, tg.RefID, tg.Datasource, dsVar)
			}
			if !strings.Contains(tg.Expr, "stampede_") {
				t.Errorf("panel %q target %s: %q reads no stampede_ metric", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 && (a.Datasource == nil || a.Datasource.UID != dsVar) {
			t.Errorf("annotation %q: datasource %+v, want %s", a.Name, a.Datasource, dsVar)
		}
	}
	if panels == 0 {
		t.Fatal("no panels")
	}
}

// requireServices reports whether a missing service fails the test
// rather than skipping it.
func requireServices() bool { return os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" }

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs cmd, logging its output to a file in dir, and kills it when
// the test ends.
func start(t *testing.T, dir, name string, cmd *exec.Cmd) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s output:\n%s", name, tail(string(b), 3000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// promResult is the part of a /api/v1/query answer the test reads.
type promResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []json.RawMessage `json:"result"`
	} `json:"data"`
}

// instant evaluates expr at instant at through Prometheus' HTTP API and
// returns how many series it gave.
func instant(ctx context.Context, base, expr string, at time.Time) (int, error) {
	v := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?"+v.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r promResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", resp.Status, r.Error)
	}
	return len(r.Data.Result), nil
}

// labelValues returns the values of label name on the series of match.
func labelValues(ctx context.Context, base, name, match string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base+"/api/v1/label/"+name+"/values?"+url.Values{"match[]": {match}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	return r.Data, nil
}

// grafanaVars replaces what Grafana substitutes in a query: the All of
// the job and instance variables, and the rate interval (four scrapes and
// more).
var grafanaVars = strings.NewReplacer("$__rate_interval", "2s", "$job", ".*", "$instance", ".*")

// TestDashboardQueriesHaveData runs a real small run (50 clients, one
// abrupt restart) with --metrics-addr, a real Prometheus scraping it every
// 250 ms, and evaluates every panel's and annotation's query through
// Prometheus' /api/v1/query once the run has ended. A query passes when it
// gives a series at some instant of the run, as a panel over the run's time
// range would show it: most at the end, the chaos event only while it was
// under way.
func TestDashboardQueriesHaveData(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if requireServices() {
			t.Fatal("prometheus not found on PATH (Debian package prometheus) and STAMPEDE_REQUIRE_SERVICES=1")
		}
		t.Skip("prometheus not found on PATH: apt-get install prometheus to run the dashboard's queries against a real run")
	}
	if testing.Short() {
		t.Skip("builds stampede and runs it for 9 s (-short skips)")
	}
	d := loadDashboard(t)
	dir := t.TempDir()

	// Built as a release is (and as the CI examples' test builds it, so
	// the two share the build cache).
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if b, err := exec.Command("make", "-s", "-C", root, "release", "RELEASE_DIR="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, b)
	}
	exe := filepath.Join(bin, "stampede")

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 250ms
scrape_configs:
  - job_name: stampede
    static_configs:
      - targets: [%q]
`, metricsAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	start(t, dir, "prometheus", exec.CommandContext(ctx, prom, "--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr))
	base := "http://" + promAddr
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("prometheus never got ready")
		}
		time.Sleep(100 * time.Millisecond)
	}

	began := time.Now()
	start(t, dir, "stampede", exec.CommandContext(ctx, exe, "run", "--clients", "50", "--duration", "9s",
		"--chaos", "at 3s restart abrupt down=2s", "--metrics-addr", metricsAddr, "--metrics-linger", "40s",
		"--quiet", "--out", filepath.Join(dir, "results")))

	// The herd's peak in a recovery is known once the run is summarised:
	// its series says the last figures are in.
	for {
		n, err := instant(ctx, base, "stampede_recovery_herd_peak_per_100ms", time.Now())
		if err == nil && n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no summarised run scraped after %s (last error %v)", time.Since(began).Round(time.Second), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(time.Second) // a few more scrapes, for the rates over the end
	end := time.Now()

	for _, v := range []struct{ label, match string }{{"job", "stampede_run_info"}, {"instance", "stampede_run_info"}} {
		vals, err := labelValues(ctx, base, v.label, v.match)
		if err != nil || len(vals) == 0 {
			t.Errorf("variable %s: label_values(%s, %s) gave %v, %v", v.label, v.match, v.label, vals, err)
		}
	}

	qs := d.queries()
	if len(qs) == 0 {
		t.Fatal("no queries in the dashboard")
	}
	for _, q := range qs {
		expr := grafanaVars.Replace(q.expr)
		found := false
		for at := end; !found && !at.Before(began); at = at.Add(-250 * time.Millisecond) {
			n, err := instant(ctx, base, expr, at)
			if err != nil {
				t.Fatalf("%s: %s: %v", q.where, expr, err)
			}
			found = n > 0
		}
		if !found {
			t.Errorf("%s: %s: no data at any instant of the run", q.where, expr)
		}
	}
	t.Logf("%d queries evaluated against a real run scraped by Prometheus", len(qs))
}
