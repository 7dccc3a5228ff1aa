package kubernetes

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerfile is deploy/Dockerfile's final stage, as the manifests rely on
// it, and its build command.
type dockerfile struct {
	uid, gid   int64
	entrypoint []string
	copied     []string // what the final stage copies from the build stage
	build      []string // the go build command's arguments after "go"
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	final := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		instr, rest, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch instr {
		case "FROM":
			final = strings.HasPrefix(rest, "scratch")
		case "RUN":
			if env, cmd, ok := strings.Cut(rest, " go build "); ok && env == "CGO_ENABLED=0" {
				d.build = append([]string{"build"}, strings.Fields(cmd)...)
			}
		case "USER":
			u, g, _ := strings.Cut(rest, ":")
			d.uid, _ = strconv.ParseInt(u, 10, 64)
			d.gid, _ = strconv.ParseInt(g, 10, 64)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &d.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: %v (want the exec form)", rest, err)
			}
		case "COPY":
			if final && strings.HasPrefix(rest, "--from=build /src/bin/") {
				f := strings.Fields(rest)
				for _, src := range f[1 : len(f)-1] {
					d.copied = append(d.copied, filepath.Join(f[len(f)-1], filepath.Base(src)))
				}
			}
		}
	}
	if !final {
		t.Fatal("the Dockerfile's last stage is not FROM scratch")
	}
	return d
}

// TestDockerfileMatchesManifests: the image runs as the user the pods
// run as, its entrypoint is the stampede the manifests' args are for, and
// it holds stampede-worker beside it.
func TestDockerfileMatchesManifests(t *testing.T) {
	d := readDockerfile(t)
	if d.uid == 0 || d.gid == 0 {
		t.Fatalf("Dockerfile USER %d:%d: want a numeric non-root user and group", d.uid, d.gid)
	}
	if !slices.Equal(d.entrypoint, []string{"/usr/local/bin/stampede"}) {
		t.Errorf("ENTRYPOINT %q, want [/usr/local/bin/stampede]", d.entrypoint)
	}
	if want := []string{"/usr/local/bin/stampede", "/usr/local/bin/stampede-worker"}; !slices.Equal(d.copied, want) {
		t.Errorf("the image holds %q, want %q", d.copied, want)
	}
	for n, j := range load(t).Jobs {
		sc := j.Spec.Template.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != d.uid || sc.RunAsGroup == nil || *sc.RunAsGroup != d.gid {
			t.Errorf("Job %s runs as %+v, the image as %d:%d", n, sc, d.uid, d.gid)
		}
	}
}

// TestImageBuildsStatic builds the image's binaries with the Dockerfile's
// own go build command and checks they are static (the image has no
// libc). That build shares nothing with the build cache of other tests
// (CGO_ENABLED=0, -trimpath) and takes minutes on a busy 2-core machine,
// so it runs in CI (CI set, or STAMPEDE_REQUIRE_SERVICES=1 as .ci/run
// sets it) or when STAMPEDE_IMAGE_BUILD=1, and skips otherwise.
func TestImageBuildsStatic(t *testing.T) {
	if os.Getenv("CI") == "" && os.Getenv("STAMPEDE_REQUIRE_SERVICES") != "1" && os.Getenv("STAMPEDE_IMAGE_BUILD") != "1" {
		t.Skip("builds every package anew (minutes): runs in CI, with STAMPEDE_REQUIRE_SERVICES=1 or with STAMPEDE_IMAGE_BUILD=1")
	}
	d := readDockerfile(t)
	out := t.TempDir()
	args := slices.Clone(d.build)
	i := slices.Index(args, "-o")
	if i < 0 || i+1 >= len(args) || args[i+1] != "bin/" {
		t.Fatalf("Dockerfile go build %q: want -o bin/", d.build)
	}
	args[i+1] = out + "/"
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, bin := range d.copied {
		p := filepath.Join(out, filepath.Base(bin))
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked (%v): the image has no libc", bin, prog.Type)
			}
		}
		f.Close()
	}
}

// TestFlagsKnownToBinary: `stampede` (built as the other tests build it)
// knows every flag the manifests pass it.
func TestFlagsKnownToBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds stampede (-short skips)")
	}
	stampede := filepath.Join(t.TempDir(), "stampede")
	cmd := exec.Command("go", "build", "-o", stampede, "./cmd/stampede")
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	help := func(sub string) string {
		b, err := exec.Command(stampede, sub, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("stampede %s --help: %v\n%s", sub, err, b)
		}
		return string(b)
	}
	f := load(t)
	for job, sub := range map[string]string{CoordinatorJob: "run", LoadgenJob: "agent", TargetJob: "agent"} {
		c, err := Container(f.Jobs[job])
		if err != nil {
			t.Fatal(err)
		}
		if c.Args[0] != sub {
			t.Errorf("%s: args start %q, want %s", job, c.Args[0], sub)
			continue
		}
		h := help(sub)
		for _, a := range c.Args[1:] {
			name, _, _ := strings.Cut(a, "=")
			if strings.HasPrefix(name, "--") && !strings.Contains(h, name+" ") {
				t.Errorf("%s: stampede %s --help does not know %s", job, sub, name)
			}
		}
	}
}
