package kubernetes

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Fleet is the decoded manifests by kind and name.
type Fleet struct {
	// Jobs: the coordinator's and the agents' (CoordinatorJob, TargetJob,
	// LoadgenJob).
	Jobs map[string]*batchv1.Job
	// Services: the coordinator's (CoordinatorJob).
	Services map[string]*corev1.Service
	// Secrets: the token's shape (TokenSecret, extra/token-secret.yaml).
	Secrets map[string]*corev1.Secret
	// Claims: the results volume.
	Claims map[string]*corev1.PersistentVolumeClaim
	// Pods: the results reader (extra/results-reader.yaml).
	Pods map[string]*corev1.Pod
	// Objects are all of them, in file order.
	Objects []Object
}

// Load decodes every manifest (All) and indexes them. Two objects of one
// kind and name are an error.
func Load() (*Fleet, error) {
	objs, err := All()
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		Jobs: map[string]*batchv1.Job{}, Services: map[string]*corev1.Service{},
		Secrets: map[string]*corev1.Secret{}, Claims: map[string]*corev1.PersistentVolumeClaim{},
		Pods: map[string]*corev1.Pod{}, Objects: objs,
	}
	for _, o := range objs {
		var dup bool
		switch v := o.Obj.(type) {
		case *batchv1.Job:
			dup = put(f.Jobs, v.Name, v)
		case *corev1.Service:
			dup = put(f.Services, v.Name, v)
		case *corev1.Secret:
			dup = put(f.Secrets, v.Name, v)
		case *corev1.PersistentVolumeClaim:
			dup = put(f.Claims, v.Name, v)
		case *corev1.Pod:
			dup = put(f.Pods, v.Name, v)
		default:
			return nil, fmt.Errorf("%s: document %d: kind %s is not one the fleet has", o.File, o.Doc, o.GVK.Kind)
		}
		if dup {
			return nil, fmt.Errorf("%s: document %d: a second %s named %s", o.File, o.Doc, o.GVK.Kind, o.Name())
		}
	}
	return f, nil
}

// put stores v under name in m and reports whether name was taken already.
func put[T any](m map[string]T, name string, v T) (taken bool) {
	_, taken = m[name]
	m[name] = v
	return taken
}
