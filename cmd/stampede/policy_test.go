package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// runPolicy runs `stampede policy ARGS...` in-process and returns its exit
// status, stdout and stderr.
func runPolicy(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "policy"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestPolicyDelays checks the schedule output is exactly one Go duration
// per line.
func TestPolicyDelays(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{
			// docs/policy.md's worked example.
			name: "exp 1s x2 max 60s",
			args: []string{"--policy", "exp:initial=1s,multiplier=2,max=60s", "--attempts", "9"},
			want: "1s\n2s\n4s\n8s\n16s\n32s\n1m0s\n1m0s\n1m0s\n",
		},
		{
			// docs/policy.md's HTTP example.
			name: "http 500ms",
			args: []string{"--policy", "exp:initial=500ms,multiplier=2,max=30s", "--attempts", "4"},
			want: "500ms\n1s\n2s\n4s\n",
		},
		{
			// Pinned seeded draws (the same as backoff's TestDelaySeeded).
			name: "jittered, default seed 1",
			args: []string{"--policy", "fixed:initial=1s,jitter=0.5", "--attempts", "3"},
			want: "1.249389122s\n893.590206ms\n1.466783946s\n",
		},
		{
			name: "jittered, client 1",
			args: []string{"--policy", "fixed:initial=1s,jitter=0.5", "--attempts", "3", "--seed", "1", "--client", "1"},
			want: "1.482585764s\n619.709122ms\n759.520589ms\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPolicy(t, tc.args...)
			if code != 0 || out != tc.want || errOut != "" {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %q\nwant exit 0, stdout:\n%s", code, out, errOut, tc.want)
			}
		})
	}
}

// TestPolicyAttemptLimit: a policy that gives up prints only its attempts,
// and says so on stderr.
func TestPolicyAttemptLimit(t *testing.T) {
	code, out, errOut := runPolicy(t, "--policy", "fixed:initial=2s,attempts=2", "--attempts", "5")
	if code != 0 || out != "2s\n2s\n" {
		t.Errorf("exit %d, stdout %q; want 0, %q", code, out, "2s\n2s\n")
	}
	if want := "stampede: policy gives up after 2 attempts; showing 2 of 5\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// TestPolicyErrors: bad values give one line on stderr naming the flag,
// exit status 2, nothing on stdout.
func TestPolicyErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"negative attempts", []string{"--policy", "exp", "--attempts", "-1"},
			"stampede: --attempts must be within 1..100000, got -1\n"},
		{"zero clients", []string{"--policy", "exp", "--clients", "0"},
			"stampede: --clients must be within 1..100000000, got 0\n"},
		{"bad spec", []string{"--policy", "exp:initial=1x"},
			`stampede: --policy: policy "exp:initial=1x": initial: time: unknown unit "x" in duration "1x"` + "\n"},
		{"no policy", []string{"--attempts", "3"},
			"stampede: --policy is required, e.g. --policy exp:initial=1s,max=60s,jitter=0.5\n"},
		{"bad seed", []string{"--policy", "exp", "--seed", "-1"},
			`stampede: --seed: invalid value "-1": want a whole number, 0 or more` + "\n"},
		{"clients with attempts", []string{"--policy", "exp", "--clients", "10", "--attempts", "3"},
			"stampede: --clients previews a fleet's first retry; it does not take --attempts or --client\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPolicy(t, tc.args...)
			if code != 2 || out != "" || errOut != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestPolicySpread: the fleet preview is reproducible for one seed, differs
// for another, and shows the herd of a fixed interval against a jittered
// exponential policy.
func TestPolicySpread(t *testing.T) {
	const jittered = "exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms"
	_, a, _ := runPolicy(t, "--policy", jittered, "--clients", "1000", "--seed", "7")
	_, b, _ := runPolicy(t, "--policy", jittered, "--clients", "1000", "--seed", "7")
	_, c, _ := runPolicy(t, "--policy", jittered, "--clients", "1000", "--seed", "8")
	if a != b {
		t.Errorf("same seed, different output:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 gave the same output:\n%s", a)
	}

	code, out, errOut := runPolicy(t, "--policy", "fixed:initial=1s", "--clients", "1000")
	want := "first retries of 1000 clients, policy fixed:initial=1s, seed 1\n" +
		"   start  count\n" +
		"0s-900ms      0  (10 empty windows folded)\n" +
		"      1s   1000  " + strings.Repeat("#", 60) + "\n" +
		"first 1s, last 1s\n" +
		"peak 1000 per 100ms, mean 90.9 per 100ms over 11 windows, peak-to-mean 11.00\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}

	var fixed, exp struct {
		Clients    int      `json:"clients"`
		Peak       uint32   `json:"peak"`
		PeakToMean float64  `json:"peak_to_mean"`
		Windows    []uint32 `json:"windows"`
		Last       string   `json:"last"`
		LastNS     int64    `json:"last_ns"`
	}
	for _, x := range []struct {
		spec string
		v    any
	}{{"fixed:initial=1s", &fixed}, {jittered, &exp}} {
		code, out, errOut := runPolicy(t, "--policy", x.spec, "--clients", "10000", "--json")
		if code != 0 {
			t.Fatalf("%s --json: exit %d, %s", x.spec, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), x.v); err != nil {
			t.Fatalf("%s --json: %v\n%s", x.spec, err, out)
		}
	}
	if fixed.Clients != 10000 || fixed.Peak != 10000 || fixed.PeakToMean != 11 || len(fixed.Windows) != 11 ||
		fixed.Last != "1s" || fixed.LastNS != 1e9 {
		t.Errorf("fixed --json = %+v", fixed)
	}
	if exp.PeakToMean <= 1 || fixed.PeakToMean < 4*exp.PeakToMean {
		t.Errorf("peak-to-mean fixed %v, jittered exp %v: want fixed several times higher", fixed.PeakToMean, exp.PeakToMean)
	}
}

// TestPolicyDelaysJSON: --json gives each delay as a string and in ns.
func TestPolicyDelaysJSON(t *testing.T) {
	code, out, _ := runPolicy(t, "--policy", "exp:initial=500ms,max=30s", "--attempts", "2", "--json")
	var got struct {
		Policy string `json:"policy"`
		Seed   uint64 `json:"seed"`
		Delays []struct {
			Attempt int    `json:"attempt"`
			Delay   string `json:"delay"`
			NS      int64  `json:"delay_ns"`
		} `json:"delays"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if got.Policy != "exp:initial=500ms,max=30s" || got.Seed != 1 || len(got.Delays) != 2 ||
		got.Delays[0].Delay != "500ms" || got.Delays[0].NS != 500e6 || got.Delays[1].Attempt != 2 || got.Delays[1].NS != 1e9 {
		t.Errorf("--json = %+v", got)
	}
}

// TestPolicyPreviewNeverAboveMax: a ceiling near the largest duration
// does not overflow: every delay the preview shows, to the hundredth
// retry, is within the policy's max.
func TestPolicyPreviewNeverAboveMax(t *testing.T) {
	for _, p := range []string{"exp:max=2562047h", "exp:multiplier=10,max=2562047h", "equal:max=2562047h", "full:max=2562047h", "decorrelated:max=2562047h"} {
		code, out, errOut := runPolicy(t, "--policy", p, "--attempts", "100", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", p, code, errOut)
		}
		var got struct {
			Delays []struct {
				DelayNS int64 `json:"delay_ns"`
			} `json:"delays"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Delays) != 100 {
			t.Fatalf("%s: %d delays (%v)", p, len(got.Delays), err)
		}
		const max = int64(2562047) * 3600e9
		for i, d := range got.Delays {
			if d.DelayNS < 0 || d.DelayNS > max {
				t.Errorf("%s: retry %d waits %dns, beyond its max %dns", p, i+1, d.DelayNS, max)
			}
		}
	}
}
