// Package kubernetes holds the Kubernetes manifests of a stampede fleet on
// a cluster (docs/kubernetes.md), decodes them strictly against the
// Kubernetes API types, and gives the command line and environment a
// manifest gives an agent, so that tests start agents exactly as a cluster
// would and the manifests cannot drift from the binary.
//
//	results.yaml      PersistentVolumeClaim stampede-results (the results folder)
//	coordinator.yaml  Service + Job stampede-coordinator (stampede run --agents N)
//	target.yaml       Indexed Job stampede-target (stampede agent --role target)
//	loadgen.yaml      Indexed Job stampede-loadgen (stampede agent --role loadgen)
//	extra/token-secret.yaml    the Secret's shape (made with kubectl create secret)
//	extra/results-reader.yaml  a pod to copy results out of the volume
//
// This package is a Go module of its own, so that only it requires the
// Kubernetes API modules: the stampede module's go.mod does not name them.
// The agents' commands it resolves are kept in testdata/commands.json
// (TestCommandsFile) for the main module's tests.
package kubernetes

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Files are the manifests, as the repository has them under
// deploy/kubernetes/.
//
//go:embed *.yaml extra/*.yaml
var Files embed.FS

// Object is one decoded manifest document.
type Object struct {
	// File is the manifest's path under deploy/kubernetes/, Doc its
	// document's position in the file (from 0, "---" separated).
	File string
	Doc  int
	// GVK is the document's apiVersion and kind.
	GVK schema.GroupVersionKind
	// Obj is the typed object: *corev1.Service, *batchv1.Job, ...
	Obj runtime.Object
}

// Name returns the object's metadata.name.
func (o Object) Name() string {
	if m, ok := o.Obj.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

// decoder decodes YAML strictly into the typed objects of the API groups
// the manifests use: a field the type does not have (misspelt, wrongly
// cased, or in the wrong place), a duplicate field or a kind outside these
// groups is an error, as `kubectl apply --validate=strict` would make it.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Decode decodes every document of one YAML file strictly (see decoder)
// and checks each object's metadata as the API server would (a name it
// accepts for its kind, valid labels and annotations). name is used in
// errors. Documents holding only comments are skipped.
func Decode(name string, data []byte) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []Object
	for doc := 0; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if js, err := yaml.YAMLToJSON(raw); err == nil && strings.TrimSpace(string(js)) == "null" {
			doc-- // comments only: not a document
			continue
		}
		obj, gvk, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		o := Object{File: name, Doc: doc, GVK: *gvk, Obj: obj}
		if err := validateMeta(o); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s %s): %w", name, doc, gvk.Kind, o.Name(), err)
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no Kubernetes object in it", name)
	}
	return objs, nil
}

// validateMeta checks metadata as the API server does: the name rule of
// the kind (a Service's name must be a DNS-1035 label: it is a DNS name in
// the cluster), labels, annotations, and no namespace (the operator picks
// it with kubectl -n).
func validateMeta(o Object) error {
	m, ok := o.Obj.(metav1.Object)
	if !ok {
		return errors.New("no metadata")
	}
	nameRule := apivalidation.NameIsDNSSubdomain
	if o.GVK.Kind == "Service" {
		nameRule = apivalidation.NameIsDNS1035Label
	}
	if m.GetNamespace() != "" {
		return fmt.Errorf("metadata.namespace %q: leave it out, kubectl -n chooses it", m.GetNamespace())
	}
	if errs := apivalidation.ValidateObjectMetaAccessor(m, false, nameRule, field.NewPath("metadata")); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// All decodes every embedded manifest, in file order.
func All() ([]Object, error) {
	var names []string
	err := fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Ext(p) == ".yaml" {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var all []Object
	for _, n := range names {
		data, err := Files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		objs, err := Decode(n, data)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}
