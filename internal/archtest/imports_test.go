// Package archtest holds tests of the module's shape: which packages may
// import which. It has no code of its own.
package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/stampede-dev/stampede/"

// roles are the packages that play one part of a run: the load generator,
// the target, the fault proxy. A role never depends on another: each runs
// in a process of its own and they meet only on the wire, so what they
// share lives in a package of neither (protocol, connerr, controlapi...).
var roles = []string{"loadgen", "target", "proxy"}

// neutral are the packages every role and the simulator build on: the
// policies (backoff, httpretry), the wire (protocol, wsdial, connerr), the
// run's spec, the session protocols, the roles' one epoll core
// (internal/epoll); and sim, which models the roles and must not run them. None of them depends on a role.
var neutral = []string{"backoff", "protocol", "connerr", "wsdial", "httpretry", "spec", "session", "internal/epoll", "sim"}

// leaves are the packages the roles and the policies are made of. They
// may use the record model (package results) but never what sums a run
// up or stores it: the summary, the SLO language, the results folder and
// the report that renders them.
var leaves = []string{"hoststat", "backoff", "spec", "fault", "protocol", "connerr", "wsdial", "httpretry", "session", "loadgen", "target", "proxy", "chaos"}

// aboveModel are the packages built on the record model (results) that
// neither the model nor a leaf may depend on. results/herd is gone (the
// herd metric is backoff's): listed so that no leaf reaches it again.
var aboveModel = []string{"results/summary", "results/slo", "results/folder", "results/herd", "report"}

// modelDeps checks that the record model and the leaves reach none of
// aboveModel, and that the report reads the model and the summary without
// running anything (no storm, no sim). It adds each break to found.
func modelDeps(pkgs map[string]pkg, found map[[2]string]string) {
	for path, p := range pkgs {
		below := path == "results" || under(path, "results/track")
		for _, l := range leaves {
			below = below || under(path, l)
		}
		for _, dep := range p.Deps {
			dep, ok := strings.CutPrefix(dep, module)
			if !ok {
				continue
			}
			for _, a := range aboveModel {
				if below && under(dep, a) {
					found[[2]string{path, a}] = fmt.Sprintf("%s reaches %s: %s", path, a, chain(pkgs, path, dep))
				}
			}
			if under(path, "report") && (under(dep, "storm") || under(dep, "sim") || under(dep, "loadgen")) {
				found[[2]string{path, dep}] = fmt.Sprintf("report runs nothing, yet reaches %s: %s", dep, chain(pkgs, path, dep))
			}
		}
	}
}

// allowed are the dependencies that break these rules in the tree today,
// importer and the role it reaches. Each is to be removed: the test fails
// once one no longer exists, so that this list only shrinks.
var allowed = map[[2]string]string{}

// pkg is what the rules need of `go list -json`.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
}

// listPackages lists every package of the module with its imports and
// transitive dependencies, as `go list -json ./...` at the module's root
// gives them (tests' imports not included: a test may start any role).
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no package")
	}
	return pkgs
}

// under reports whether package path p (relative to the module) is dir or
// inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// chain returns how from reaches to through direct imports, e.g.
// "sim -> chaos -> target", for the error message.
func chain(pkgs map[string]pkg, from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return strings.Join(path, " -> ")
		}
		for _, imp := range pkgs[p].Imports {
			imp, ok := strings.CutPrefix(imp, module)
			if _, seen := prev[imp]; ok && !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return from + " -> ... -> " + to
}

// violations checks the rules over pkgs and returns each broken one as
// importer, role (or "cmd") and a message.
func violations(pkgs map[string]pkg) map[[2]string]string {
	found := map[[2]string]string{}
	roleOf := func(p string) string {
		for _, r := range roles {
			if under(p, r) {
				return r
			}
		}
		return ""
	}
	for path, p := range pkgs {
		for _, dep := range p.Deps {
			dep, ok := strings.CutPrefix(dep, module)
			if !ok {
				continue
			}
			// No library depends on a command.
			if under(dep, "cmd") && !under(path, "cmd") {
				found[[2]string{path, "cmd"}] = fmt.Sprintf("%s imports a command (%s)", chain(pkgs, path, dep), dep)
			}
			r := roleOf(dep)
			if r == "" {
				continue
			}
			// A role depends on no other role.
			if own := roleOf(path); own != "" && own != r {
				found[[2]string{own, r}] = fmt.Sprintf("role %s depends on role %s: %s", own, r, chain(pkgs, path, dep))
			}
			// The policies, the wire and the model depend on no role.
			for _, n := range neutral {
				if under(path, n) {
					found[[2]string{n, r}] = fmt.Sprintf("%s depends on role %s: %s", n, r, chain(pkgs, path, dep))
				}
			}
		}
	}
	modelDeps(pkgs, found)
	return found
}

// TestImportRules: no role depends on another role, no policy, wire or
// model package depends on a role, and no library on a command, except
// for the listed dependencies that are to be removed.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range roles {
		if _, ok := pkgs[r]; !ok {
			t.Fatalf("role package %s is not in the module: update roles", r)
		}
	}
	found := violations(pkgs)
	var keys [][2]string
	for k := range found {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		if _, ok := allowed[k]; !ok {
			t.Errorf("%s", found[k])
		}
	}
	for k := range allowed {
		if _, ok := found[k]; !ok {
			t.Errorf("%s no longer depends on %s: remove it from allowed", k[0], k[1])
		}
	}
}

// boundaries are packages kept apart from what they must not reach, even
// through others: the package (exactly that one, not those under it) and
// the tree it must not depend on, with the reason.
var boundaries = []struct {
	pkg, notOn, why string
}{
	{"chaos", "results", "the schedule language is read by the simulator, advise and the proxy, which need no results"},
	{"target", "target/group", "a server runs in one process; the group starts processes of it and controls them"},
	{"target", "childproc", "a server starts no process; target/group does"},
	{"target/listener", "target", "a listening socket knows no server"},
	{"agent", "cluster", "an agent runs one role from its plan and knows no coordinator"},
	{"cluster/hub", "agent", "the hub carries the agents' messages between hosts without reading them"},
	{"cluster/hub", "loadgen", "the hub carries the roles' messages and runs no role"},
	{"cluster/hub", "target", "the hub carries the roles' messages and runs no role"},
	{"cluster/hub", "proxy", "the hub carries the roles' messages and runs no role"},
}

// TestBoundaries: each package of boundaries depends on nothing in the
// tree it is kept apart from.
func TestBoundaries(t *testing.T) {
	pkgs := listPackages(t)
	for _, b := range boundaries {
		p, ok := pkgs[b.pkg]
		if !ok {
			t.Errorf("package %s is not in the module: update boundaries", b.pkg)
			continue
		}
		for _, dep := range p.Deps {
			if dep, ok := strings.CutPrefix(dep, module); ok && under(dep, b.notOn) {
				t.Errorf("%s depends on %s (%s): %s", b.pkg, b.notOn, chain(pkgs, b.pkg, dep), b.why)
			}
		}
	}
}
