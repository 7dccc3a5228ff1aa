package kubernetes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// agentFlags are the flags of `stampede agent`: the agents'
// args may use these and no others.
var agentFlags = []string{"--nats", "--token-file", "--name", "--role", "--capacity", "--source-ips", "--nats-creds", "--tls-cert", "--tls-key", "--ca", "--allow-remote", "--join-timeout"}

// TestAgentCommand: each completion index gives its own agent: named by
// the index, joining the given URL with the given token file, with the
// role of its Job; the arguments are `agent` and the agreed flags, every
// $(VAR) resolved.
func TestAgentCommand(t *testing.T) {
	f := load(t)
	const tokenFile, url, ca = "/tmp/run/token", "tls://10.203.0.1:4222", "/tmp/run/ca.crt"
	for job, role := range agentJobs {
		n := int(*f.Jobs[job].Spec.Completions)
		for i := range n {
			args, env, err := JobCommand(job, i, tokenFile, url, ca)
			if err != nil {
				t.Fatal(err)
			}
			name := role + "-" + strconv.Itoa(i)
			if args[0] != "agent" {
				t.Errorf("%s[%d]: args %q, want `agent` first", job, i, args)
			}
			for _, a := range args[1:] {
				if strings.HasPrefix(a, "-") && !slices.Contains(agentFlags, strings.SplitN(a, "=", 2)[0]) {
					t.Errorf("%s[%d]: flag %s is not one of stampede agent's %v", job, i, a, agentFlags)
				}
			}
			for flag, want := range map[string]string{"--nats": url, "--token-file": tokenFile, "--name": name, "--role": role, "--ca": ca} {
				if got, ok := flagValue(args, flag); got != want {
					t.Errorf("%s[%d]: %s %q (given: %v), want %q", job, i, flag, got, ok, want)
				}
			}
			for _, kv := range []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(i), EnvAgentName + "=" + name, EnvNATSURL + "=" + url, EnvTokenFile + "=" + tokenFile, EnvNATSCA + "=" + ca} {
				if !slices.Contains(env, kv) {
					t.Errorf("%s[%d]: env %q lacks %s", job, i, env, kv)
				}
			}
			for _, s := range append(slices.Clone(args), env...) {
				if strings.Contains(s, "$(") {
					t.Errorf("%s[%d]: %q is not expanded", job, i, s)
				}
			}
		}
		if _, _, err := JobCommand(job, n, tokenFile, url, ca); err == nil {
			t.Errorf("%s: index %d (= completions) accepted", job, n)
		}
		if _, _, err := JobCommand(job, -1, tokenFile, url, ca); err == nil {
			t.Errorf("%s: index -1 accepted", job)
		}
	}
	a1, _, _ := AgentCommand(1, tokenFile, url, ca)
	l1, _, _ := JobCommand(LoadgenJob, 1, tokenFile, url, ca)
	t0, _, _ := TargetCommand(0, tokenFile, url, ca)
	g0, _, _ := JobCommand(TargetJob, 0, tokenFile, url, ca)
	if !slices.Equal(a1, l1) || !slices.Equal(t0, g0) {
		t.Errorf("AgentCommand is not the loadgen Job's (%q, %q) or TargetCommand not the target's (%q, %q)", a1, l1, t0, g0)
	}
	if _, _, err := JobCommand("stampede-nothing", 0, tokenFile, url, ca); err == nil {
		t.Error("a Job the manifests do not have gave a command")
	}
}

// ExampleAgentCommand: the second loadgen agent, joining a coordinator
// on the namespace hosts' bridge (docs/hosts.md).
func ExampleAgentCommand() {
	args, env, err := AgentCommand(1, "/tmp/run/token", "tls://10.203.0.1:4222", "/tmp/run/ca.crt")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(args, " "))
	fmt.Println(strings.Join(env, "\n"))
	// Output:
	// agent --nats tls://10.203.0.1:4222 --token-file /tmp/run/token --name loadgen-1 --role loadgen --ca /tmp/run/ca.crt --allow-remote 10.244.0.0/16
	// JOB_COMPLETION_INDEX=1
	// STAMPEDE_AGENT_NAME=loadgen-1
	// STAMPEDE_NATS_URL=tls://10.203.0.1:4222
	// STAMPEDE_NATS_CA=/tmp/run/ca.crt
	// STAMPEDE_POD_CIDR=10.244.0.0/16
	// STAMPEDE_TOKEN_FILE=/tmp/run/token
}

// indexedJob is a minimal Indexed Job of one container for Command's
// edge cases.
func indexedJob(c corev1.Container) *batchv1.Job {
	mode, n := batchv1.IndexedCompletion, int32(2)
	j := &batchv1.Job{}
	j.Name = "j"
	j.Spec.CompletionMode = &mode
	j.Spec.Completions = &n
	j.Spec.Template.Spec.Containers = []corev1.Container{c}
	return j
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// TestCommand: the kubelet's order (a variable sees only those before
// it; the args see all), $$ escapes, unknown references kept, overrides
// seen by later variables; and what cannot be resolved off a cluster is
// refused rather than guessed.
func TestCommand(t *testing.T) {
	c := corev1.Container{
		Args: []string{"agent", "--name", "$(NAME)", "--x", "$(LATE)", "$$(NAME)", "$(NOPE)"},
		Env: []corev1.EnvVar{
			{Name: "EARLY", Value: "e-$(LATE)"}, // LATE is not defined yet: kept
			fieldEnv("JOB_COMPLETION_INDEX", CompletionIndexField),
			{Name: "URL", Value: "nats://cluster:4222"},
			{Name: "NAME", Value: "n-$(JOB_COMPLETION_INDEX)@$(URL)"},
			{Name: "LATE", Value: "late"},
		},
	}
	args, env, err := Command(indexedJob(c), 1, map[string]string{"URL": "nats://here:1"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"agent", "--name", "n-1@nats://here:1", "--x", "late", "$(NAME)", "$(NOPE)"}
	wantEnv := []string{"EARLY=e-$(LATE)", "JOB_COMPLETION_INDEX=1", "URL=nats://here:1", "NAME=n-1@nats://here:1", "LATE=late"}
	if !slices.Equal(args, wantArgs) || !slices.Equal(env, wantEnv) {
		t.Fatalf("got %q %q, want %q %q", args, env, wantArgs, wantEnv)
	}

	for _, bad := range []struct {
		name     string
		edit     func(*batchv1.Job)
		override map[string]string
		index    int
	}{
		{"command replaces the entrypoint", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Command = []string{"/bin/sh", "-c"} }, nil, 0},
		{"envFrom", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "X"}}
		}, nil, 0},
		{"a fieldRef other than the index", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Env = append(j.Spec.Template.Spec.Containers[0].Env, fieldEnv("POD", "metadata.name"))
		}, nil, 0},
		{"a secretKeyRef", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Env = append(j.Spec.Template.Spec.Containers[0].Env,
				corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "token"}}})
		}, nil, 0},
		{"a variable twice", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Env = append(j.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "URL", Value: "x"})
		}, nil, 0},
		{"an override the manifest does not define", func(*batchv1.Job) {}, map[string]string{"STAMPEDE_NATS_URL": "nats://x:1"}, 0},
		{"not Indexed", func(j *batchv1.Job) { j.Spec.CompletionMode = nil }, nil, 0},
		{"two containers", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers = append(j.Spec.Template.Spec.Containers, corev1.Container{})
		}, nil, 0},
		{"index beyond completions", func(*batchv1.Job) {}, nil, 2},
	} {
		j := indexedJob(*c.DeepCopy())
		bad.edit(j)
		if args, env, err := Command(j, bad.index, bad.override); err == nil {
			t.Errorf("%s: got %q %q, want an error", bad.name, args, env)
		}
	}
}

// TestExpand: the kubelet's $(VAR) expansion, case by case.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b", "EMPTY": "", "REF": "$(A)"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, c := range []struct{ in, want string }{
		{"$(A)", "a"},
		{"___$(B)___", "___b___"},
		{"$(A)-$(A)", "a-a"},
		{"$(A)$(B)", "ab"},
		{"x$(EMPTY)y", "xy"},
		{"$(REF)", "$(A)"},      // no second pass
		{"$(NOPE)", "$(NOPE)"},  // unknown: kept
		{"$$(A)", "$(A)"},       // escaped
		{"$$$(A)", "$a"},        // an escaped $, then a reference
		{"$$$$$$(A)", "$$$(A)"}, // three escaped $, then text
		{"$(A", "$(A"},          // unclosed
		{"$(A$(B)", "$(A$(B)"},  // the first ) closes "A$(B": unknown
		{"$()", "$()"},          // empty name: unknown
		{"$A", "$A"},            // not a reference
		{"a$", "a$"},            // a $ at the end
		{"$", "$"},              //
		{"$$", "$"},             //
		{"f000-$$A", "f000-$A"}, //
		{"--name=$(A)-$(B)", "--name=a-b"},
		{"ü$(A)ü", "üaü"},
	} {
		if got := Expand(c.in, lookup); got != c.want {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
