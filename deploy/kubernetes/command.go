package kubernetes

import (
	"errors"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Names of the manifests' objects and of the environment variables the
// commands are built from.
const (
	// CoordinatorJob is the coordinator's Job; its Service has the same
	// name, so agents reach nats://stampede-coordinator:PORT.
	CoordinatorJob = "stampede-coordinator"
	// LoadgenJob and TargetJob are the agents' Indexed Jobs.
	LoadgenJob = "stampede-loadgen"
	TargetJob  = "stampede-target"
	// TokenSecret is the Secret holding the run's token under TokenKey.
	TokenSecret = "stampede-run-token"
	TokenKey    = "token"
	// EnvNATSURL and EnvTokenFile are the two values of an agent's
	// environment that differ off the cluster: the coordinator's URL (its
	// Service's, on a cluster) and where the token file is (the Secret's
	// mount). AgentCommand replaces them.
	EnvNATSURL   = "STAMPEDE_NATS_URL"
	EnvTokenFile = "STAMPEDE_TOKEN_FILE"
	// EnvNATSCA is where an agent finds the CA that signed the
	// coordinator's NATS certificate (the TLSSecret's CAKey, mounted);
	// off the cluster, a test's own CA. AgentCommand replaces it too.
	EnvNATSCA = "STAMPEDE_NATS_CA"
	// TLSSecret holds the coordinator's NATS certificate and key
	// (TLSCertKey, TLSKeyKey) and the CA the agents verify it with
	// (CAKey).
	TLSSecret  = "stampede-nats-tls"
	TLSCertKey = "tls.crt"
	TLSKeyKey  = "tls.key"
	CAKey      = "ca.crt"
	// EnvAgentName is the agent's name, which `stampede agent` also reads
	// when --name is not given.
	EnvAgentName = "STAMPEDE_AGENT_NAME"
	// CompletionIndexField is the Downward API field an Indexed Job's pod
	// reads its completion index from.
	CompletionIndexField = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
)

// AgentCommand returns the arguments (after the program, the image's
// entrypoint `stampede`) and the environment ("NAME=VALUE", in the
// manifest's order) of the loadgen agent with completion index index, as
// loadgen.yaml gives them and the kubelet resolves them, with the token
// file at tokenFile, the coordinator at natsURL and the CA that signed its
// certificate at caFile. A test starts its
// agents with these, so they run as they would on a cluster.
func AgentCommand(index int, tokenFile, natsURL, caFile string) (args []string, env []string, err error) {
	return JobCommand(LoadgenJob, index, tokenFile, natsURL, caFile)
}

// TargetCommand is AgentCommand for the target agent (target.yaml).
func TargetCommand(index int, tokenFile, natsURL, caFile string) (args []string, env []string, err error) {
	return JobCommand(TargetJob, index, tokenFile, natsURL, caFile)
}

// JobCommand is AgentCommand for the Indexed Job named job.
func JobCommand(job string, index int, tokenFile, natsURL, caFile string) (args []string, env []string, err error) {
	f, err := Load()
	if err != nil {
		return nil, nil, err
	}
	j, ok := f.Jobs[job]
	if !ok {
		return nil, nil, fmt.Errorf("kubernetes: no Job %q in the manifests", job)
	}
	return Command(j, index, map[string]string{EnvNATSURL: natsURL, EnvTokenFile: tokenFile, EnvNATSCA: caFile})
}

// Command resolves the one container of an Indexed Job's pod template for
// completion index index as the kubelet would: env values in order, each
// expanded ($(VAR), see Expand) over the variables before it; a fieldRef
// to the completion-index annotation is index; then the args expanded
// over the whole environment. A variable named in override takes the
// override's value in place of the manifest's (before later variables and
// the args see it); each must be defined by the manifest. A container
// with a command (the image's entrypoint replaced), envFrom, or any other
// valueFrom is refused: off a cluster there is nothing to resolve it from.
func Command(job *batchv1.Job, index int, override map[string]string) (args []string, env []string, err error) {
	name := job.Name
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		return nil, nil, fmt.Errorf("kubernetes: Job %s is not an Indexed Job (completionMode: Indexed)", name)
	}
	if job.Spec.Completions == nil || index < 0 || index >= int(*job.Spec.Completions) {
		return nil, nil, fmt.Errorf("kubernetes: Job %s: completion index %d is outside 0..completions-1", name, index)
	}
	cs := job.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return nil, nil, fmt.Errorf("kubernetes: Job %s: %d containers, want 1", name, len(cs))
	}
	c := cs[0]
	if len(c.Command) > 0 {
		return nil, nil, fmt.Errorf("kubernetes: Job %s: the container sets command %q; the image's entrypoint (stampede) is what the args are for", name, c.Command)
	}
	if len(c.EnvFrom) > 0 {
		return nil, nil, fmt.Errorf("kubernetes: Job %s: envFrom cannot be resolved off a cluster", name)
	}
	vars := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	seen := map[string]bool{}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = Expand(e.Value, lookup)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == CompletionIndexField:
			v = strconv.Itoa(index)
		default:
			return nil, nil, fmt.Errorf("kubernetes: Job %s: env %s: only a value or the completion index (fieldRef %s) can be resolved off a cluster", name, e.Name, CompletionIndexField)
		}
		if o, ok := override[e.Name]; ok {
			v = o
			seen[e.Name] = true
		}
		if _, dup := vars[e.Name]; dup {
			// The kubelet keeps the last; a manifest has no reason to.
			return nil, nil, fmt.Errorf("kubernetes: Job %s: env %s is defined twice", name, e.Name)
		}
		vars[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	for k := range override {
		if !seen[k] {
			return nil, nil, fmt.Errorf("kubernetes: Job %s: the manifest does not define env %s, which the command's caller sets", name, k)
		}
	}
	for _, a := range c.Args {
		args = append(args, Expand(a, lookup))
	}
	if len(args) == 0 {
		return nil, nil, errors.New("kubernetes: Job " + name + ": no args")
	}
	return args, env, nil
}

// Container returns the pod template's one container of a Job.
func Container(job *batchv1.Job) (*corev1.Container, error) {
	if n := len(job.Spec.Template.Spec.Containers); n != 1 {
		return nil, fmt.Errorf("kubernetes: Job %s: %d containers, want 1", job.Name, n)
	}
	return &job.Spec.Template.Spec.Containers[0], nil
}
