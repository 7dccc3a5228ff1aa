package kubernetes

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestManifestsDecodeStrictly: every YAML file in this directory (and
// below) is embedded, and every document in them decodes strictly into
// its Kubernetes type with valid metadata.
func TestManifestsDecodeStrictly(t *testing.T) {
	var onDisk []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			onDisk = append(onDisk, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var decoded []string
	for _, o := range objs {
		if !slices.Contains(decoded, o.File) {
			decoded = append(decoded, o.File)
		}
	}
	slices.Sort(onDisk)
	if !slices.Equal(onDisk, decoded) {
		t.Fatalf("files on disk %v, decoded %v: a manifest is not embedded (or not .yaml)", onDisk, decoded)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GVK.Kind+"/"+o.Name())
	}
	want := []string{
		"Service/stampede-coordinator", "Job/stampede-coordinator", // coordinator.yaml
		"Secret/stampede-nats-tls", "Pod/stampede-results-reader", "Secret/stampede-run-token", // extra/
		"Job/stampede-loadgen", "PersistentVolumeClaim/stampede-results", "Job/stampede-target",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("objects %v, want %v", kinds, want)
	}
}

// TestStrictDecodeRefuses: the check can fail. Each edit of a real
// manifest is something a lenient decoder would let through (or a
// cluster would refuse only at apply time); the unedited file decodes.
func TestStrictDecodeRefuses(t *testing.T) {
	orig, err := Files.ReadFile("loadgen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode("loadgen.yaml", orig); err != nil {
		t.Fatalf("the unedited manifest: %v", err)
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"unknown field", "  completions: 3\n", "  completions: 3\n  completionz: 3\n", `unknown field "spec.completionz"`},
		{"field of another kind (a Deployment's replicas)", "  completions: 3\n", "  completions: 3\n  replicas: 3\n", `unknown field "spec.replicas"`},
		{"wrongly cased field", "  parallelism: 3\n", "  Parallelism: 3\n", `unknown field "spec.Parallelism"`},
		{"duplicate field", "  parallelism: 3\n", "  parallelism: 3\n  parallelism: 4\n", `key "parallelism" already set`},
		{"field in the wrong place", "          imagePullPolicy: IfNotPresent\n", "          imagePullPolicy: IfNotPresent\n          nodeName: node-1\n", `unknown field "spec.template.spec.containers[0].nodeName"`},
		{"wrong type", "  completions: 3\n", "  completions: three\n", "cannot unmarshal"},
		{"unknown kind", "kind: Job\n", "kind: Jobb\n", `no kind "Jobb"`},
		{"a namespace", "  name: stampede-loadgen\n", "  name: stampede-loadgen\n  namespace: load\n", "leave it out"},
		{"a name the API server refuses", "  name: stampede-loadgen\n", "  name: Stampede_Loadgen\n", "metadata.name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := strings.Replace(string(orig), c.old, c.new, 1)
			if edited == string(orig) {
				t.Fatalf("%q is not in loadgen.yaml", c.old)
			}
			_, err := Decode("loadgen.yaml", []byte(edited))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	if _, err := Decode("empty.yaml", []byte("# nothing\n---\n")); err == nil {
		t.Error("a file with no object decoded")
	}
}

// flagValue returns the value of --name in args ("--name V" or
// "--name=V") and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func load(t *testing.T) *Fleet {
	t.Helper()
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// agentJobs are the agents' Jobs of the fleet and the role each declares.
var agentJobs = map[string]string{LoadgenJob: "loadgen", TargetJob: "target"}

// TestCoordinatorWaitsForEveryAgent: the coordinator's --agents is the
// number of agent pods the Indexed Jobs make (their completions), and
// each Job runs all its pods at once.
func TestCoordinatorWaitsForEveryAgent(t *testing.T) {
	f := load(t)
	c, err := Container(f.Jobs[CoordinatorJob])
	if err != nil {
		t.Fatal(err)
	}
	agents, ok := flagValue(c.Args, "--agents")
	if !ok {
		t.Fatalf("coordinator args %q have no --agents", c.Args)
	}
	total := 0
	for name := range agentJobs {
		j := f.Jobs[name]
		if j == nil {
			t.Fatalf("no Job %s", name)
		}
		if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
			t.Errorf("%s: completionMode is not Indexed", name)
		}
		if j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Parallelism != *j.Spec.Completions {
			t.Errorf("%s: parallelism must equal completions (every agent runs at once)", name)
			continue
		}
		total += int(*j.Spec.Completions)
	}
	if agents != strconv.Itoa(total) {
		t.Errorf("coordinator --agents %s, but the agents' Jobs have %d completions in all", agents, total)
	}
}

// TestServiceReachesCoordinator: the Service's port is the coordinator's
// --listen port, its targetPort names the container's port of that
// number, its selector picks the coordinator's pods, and the agents' NATS
// URL names the Service and its port.
func TestServiceReachesCoordinator(t *testing.T) {
	f := load(t)
	svc := f.Services[CoordinatorJob]
	if svc == nil {
		t.Fatalf("no Service %s", CoordinatorJob)
	}
	job := f.Jobs[CoordinatorJob]
	c, err := Container(job)
	if err != nil {
		t.Fatal(err)
	}
	listen, ok := flagValue(c.Args, "--listen")
	if !ok {
		t.Fatalf("coordinator args %q have no --listen", c.Args)
	}
	_, port, ok := strings.Cut(listen, ":")
	if !ok || port == "" {
		t.Fatalf("--listen %q is not HOST:PORT", listen)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service ports %v, want one", svc.Spec.Ports)
	}
	sp := svc.Spec.Ports[0]
	if strconv.Itoa(int(sp.Port)) != port {
		t.Errorf("Service port %d, coordinator --listen %s", sp.Port, listen)
	}
	var cp *corev1.ContainerPort
	for i := range c.Ports {
		if c.Ports[i].Name == sp.TargetPort.String() || strconv.Itoa(int(c.Ports[i].ContainerPort)) == sp.TargetPort.String() {
			cp = &c.Ports[i]
		}
	}
	if cp == nil || strconv.Itoa(int(cp.ContainerPort)) != port {
		t.Errorf("Service targetPort %s names container port %+v, want one numbered %s", sp.TargetPort.String(), cp, port)
	}
	labels := job.Spec.Template.Labels
	if len(svc.Spec.Selector) == 0 {
		t.Error("Service has no selector")
	}
	for k, v := range svc.Spec.Selector {
		if labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the coordinator's pod labels %v", k, v, labels)
		}
	}
	// No agent pod may match it: the Service must lead to the coordinator only.
	for name := range agentJobs {
		l := f.Jobs[name].Spec.Template.Labels
		match := true
		for k, v := range svc.Spec.Selector {
			match = match && l[k] == v
		}
		if match {
			t.Errorf("Service selector %v matches %s's pods too", svc.Spec.Selector, name)
		}
		e := env(t, f.Jobs[name], EnvNATSURL)
		if want := "tls://" + svc.Name + ":" + port; e != want {
			t.Errorf("%s: %s=%q, want %q (the Service's name and port)", name, EnvNATSURL, e, want)
		}
	}
}

// env returns the value a Job's container gives the variable name.
func env(t *testing.T, j *batchv1.Job, name string) string {
	t.Helper()
	c, err := Container(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("%s: no env %s", j.Name, name)
	return ""
}

// TestTokenFromSecret: every pod that needs the token mounts the Secret's
// key read-only, as the file its --token-file names, readable by its group
// (fsGroup) and nobody else, never writable; and the Secret's shape has
// that key.
func TestTokenFromSecret(t *testing.T) {
	f := load(t)
	sec := f.Secrets[TokenSecret]
	if sec == nil {
		t.Fatalf("no Secret %s", TokenSecret)
	}
	if _, ok := sec.StringData[TokenKey]; !ok {
		t.Fatalf("Secret %s has no key %q: %v", TokenSecret, TokenKey, sec.StringData)
	}
	// The shape's placeholder is not a token a run accepts (at least 16
	// characters), so applying it by mistake stops the run at once.
	if p := sec.StringData[TokenKey]; len(p) >= 16 {
		t.Errorf("placeholder token %q is long enough to be used", p)
	}
	for _, name := range []string{CoordinatorJob, LoadgenJob, TargetJob} {
		j := f.Jobs[name]
		spec := j.Spec.Template.Spec
		c, err := Container(j)
		if err != nil {
			t.Fatal(err)
		}
		file := env(t, j, EnvTokenFile)
		if v, _ := flagValue(c.Args, "--token-file"); v != "$("+EnvTokenFile+")" {
			t.Errorf("%s: --token-file %q, want $(%s)", name, v, EnvTokenFile)
		}
		var vol *corev1.Volume
		for i := range spec.Volumes {
			if s := spec.Volumes[i].Secret; s != nil && s.SecretName == TokenSecret {
				vol = &spec.Volumes[i]
			}
		}
		if vol == nil {
			t.Errorf("%s: no volume of Secret %s", name, TokenSecret)
			continue
		}
		if len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != TokenKey {
			t.Errorf("%s: volume %s items %v, want the one key %q", name, vol.Name, vol.Secret.Items, TokenKey)
			continue
		}
		// The kubelet makes the file root's, group fsGroup, and adds
		// group read: the mode says so, and gives others nothing.
		mode := vol.Secret.DefaultMode
		if mode == nil || *mode != 0o440 {
			t.Errorf("%s: token file mode %o, want 0440 (read-only, owner and group, nothing for others)", name, derefMode(mode))
		}
		if sc := spec.SecurityContext; sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup {
			t.Errorf("%s: a non-root container reads the token through its group: fsGroup must be its runAsGroup", name)
		}
		var mounted bool
		for _, m := range c.VolumeMounts {
			if m.Name != vol.Name {
				continue
			}
			mounted = true
			if !m.ReadOnly {
				t.Errorf("%s: token volume mounted writable", name)
			}
			if want := m.MountPath + "/" + vol.Secret.Items[0].Path; want != file {
				t.Errorf("%s: %s=%q, but the Secret's key is mounted as %q", name, EnvTokenFile, file, want)
			}
		}
		if !mounted {
			t.Errorf("%s: token volume %s not mounted", name, vol.Name)
		}
	}
}

func derefMode(m *int32) int32 {
	if m == nil {
		return -1
	}
	return *m
}

// TestPodsLockedDown: every pod runs as a non-root user with no privilege
// escalation, a read-only root, no capabilities, no service account token,
// bounded in time, with requests and limits (limits at least the
// requests), on the same image; a Job's working directory is writable.
func TestPodsLockedDown(t *testing.T) {
	f := load(t)
	type pod struct {
		name     string
		spec     corev1.PodSpec
		deadline *int64
	}
	var pods []pod
	for n, j := range f.Jobs {
		pods = append(pods, pod{"Job " + n, j.Spec.Template.Spec, j.Spec.ActiveDeadlineSeconds})
	}
	for n, p := range f.Pods {
		pods = append(pods, pod{"Pod " + n, p.Spec, p.Spec.ActiveDeadlineSeconds})
	}
	var image string
	for _, p := range pods {
		sc := p.spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			t.Errorf("%s: want runAsNonRoot and a non-zero runAsUser", p.name)
		}
		if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: want the RuntimeDefault seccomp profile", p.name)
		}
		if a := p.spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s: mounts a service account token it does not use", p.name)
		}
		if p.deadline == nil || *p.deadline <= 0 {
			t.Errorf("%s: no activeDeadlineSeconds: nothing bounds it in time", p.name)
		}
		for _, c := range p.spec.Containers {
			s := c.SecurityContext
			if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation ||
				s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem ||
				s.Capabilities == nil || !slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s/%s: want allowPrivilegeEscalation false, readOnlyRootFilesystem true, capabilities drop [ALL]", p.name, c.Name)
			}
			if strings.HasPrefix(p.name, "Job ") {
				// A read-only root: relative paths must land somewhere writable.
				writable := false
				for _, m := range c.VolumeMounts {
					writable = writable || (!m.ReadOnly && (c.WorkingDir == m.MountPath || strings.HasPrefix(c.WorkingDir, m.MountPath+"/")))
				}
				if !writable {
					t.Errorf("%s/%s: workingDir %q is not on a writable volume", p.name, c.Name, c.WorkingDir)
				}
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okr := c.Resources.Requests[r]
				lim, okl := c.Resources.Limits[r]
				if !okr || !okl || req.Cmp(lim) > 0 {
					t.Errorf("%s/%s: %s request %v limit %v: want both, request <= limit", p.name, c.Name, r, req.String(), lim.String())
				}
			}
			if strings.HasPrefix(p.name, "Job ") {
				if image == "" {
					image = c.Image
				}
				if c.Image != image {
					t.Errorf("%s/%s: image %s, others %s", p.name, c.Name, c.Image, image)
				}
			}
		}
	}
}

// TestNATSOverTLS: the coordinator's embedded NATS server speaks TLS with
// the certificate and key of the TLSSecret, mounted read-only where its
// --tls-cert and --tls-key look, the key readable by the pod's group
// alone, with no --insecure-listen left; every agent dials tls:// and
// verifies the server with the Secret's CA (--ca), mounted where its
// environment says; no agent mounts the key. The Secret's shape has the
// three keys, and its placeholders are no PEM a run could start with.
func TestNATSOverTLS(t *testing.T) {
	f := load(t)
	sec := f.Secrets[TLSSecret]
	if sec == nil {
		t.Fatalf("no Secret %s", TLSSecret)
	}
	for _, k := range []string{TLSCertKey, TLSKeyKey, CAKey} {
		if v, ok := sec.StringData[k]; !ok || strings.Contains(v, "BEGIN") {
			t.Errorf("Secret %s: key %q missing or a real PEM in the shape: %q", TLSSecret, k, v)
		}
	}
	co := f.Jobs[CoordinatorJob]
	c, err := Container(co)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(c.Args, "--insecure-listen") {
		t.Errorf("coordinator: --insecure-listen is still given: %q", c.Args)
	}
	mounts := secretFiles(t, co, TLSSecret)
	for flag, key := range map[string]string{"--tls-cert": TLSCertKey, "--tls-key": TLSKeyKey} {
		v, _ := flagValue(c.Args, flag)
		if m, ok := mounts[key]; !ok || v != m.path {
			t.Errorf("coordinator: %s %q, but the Secret's %s is mounted as %q", flag, v, key, m.path)
		}
	}
	if m := mounts[TLSKeyKey]; m.mode&0o007 != 0 || m.mode&0o200 != 0 {
		t.Errorf("coordinator: the key's mode %o gives others access or is writable", m.mode)
	}
	for name := range agentJobs {
		j := f.Jobs[name]
		c, err := Container(j)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := flagValue(c.Args, "--ca"); v != "$("+EnvNATSCA+")" {
			t.Errorf("%s: --ca %q, want $(%s)", name, v, EnvNATSCA)
		}
		mounts := secretFiles(t, j, TLSSecret)
		if m, ok := mounts[CAKey]; !ok || m.path != env(t, j, EnvNATSCA) {
			t.Errorf("%s: %s=%q, but the Secret's %s is mounted as %q", name, EnvNATSCA, env(t, j, EnvNATSCA), CAKey, m.path)
		}
		if _, ok := mounts[TLSKeyKey]; ok {
			t.Errorf("%s: mounts the server's private key", name)
		}
		if u := env(t, j, EnvNATSURL); !strings.HasPrefix(u, "tls://") {
			t.Errorf("%s: %s=%q, want tls://", name, EnvNATSURL, u)
		}
	}
}

// secretFile is one key of a Secret as a container sees it.
type secretFile struct {
	path string
	mode int32
}

// secretFiles returns where the Job's container finds each key of the
// Secret named secret, through read-only mounts of its volumes.
func secretFiles(t *testing.T, j *batchv1.Job, secret string) map[string]secretFile {
	t.Helper()
	c, err := Container(j)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]secretFile{}
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secret {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			if !m.ReadOnly {
				t.Errorf("%s: volume %s of Secret %s mounted writable", j.Name, v.Name, secret)
			}
			for _, it := range v.Secret.Items {
				mode := derefMode(v.Secret.DefaultMode)
				if it.Mode != nil {
					mode = *it.Mode
				}
				out[it.Key] = secretFile{path: m.MountPath + "/" + it.Path, mode: mode}
			}
		}
	}
	return out
}
