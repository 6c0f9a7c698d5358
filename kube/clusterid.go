package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/keys"
)

// ClusterIDOptions tunes EnsureClusterID. The zero value, like a nil
// pointer, uses the Liqo namespace keys.DefaultNamespace and
// crypto/rand.Reader.
type ClusterIDOptions struct {
	// Namespace is the Liqo namespace, where the record lives.
	Namespace string
	// Rand is the source of a generated ID.
	Rand io.Reader
	// HelmRelease is the Helm release a record it writes is made adoptable
	// by (its ownership metadata), so that a later helm install of Liqo in
	// Namespace adopts it instead of failing; default "liqo".
	HelmRelease string
}

// EnsureClusterID returns the cluster's own ID, with one precedence rule:
//
//   - the cluster records one (the ConfigMap labelled
//     clusterid.RecordLabel=clusterid.RecordLabelValue in the Liqo
//     namespace, key clusterid.RecordKey, as Liqo and liqoctl keep it):
//     that ID. want, when set, must equal it, else a
//     *clusterid.ConflictError; several records are a
//     clusterid.ErrAmbiguous error, a record without a valid ID a
//     clusterid.ErrInvalid one;
//   - none: want (validated) or else a new ID (clusterid.Generate),
//     recorded as Liqo's chart records it (the ConfigMap
//     clusterid.RecordName, created with the Liqo namespace when missing),
//     so that liqoctl finds it and every replica and restart gets the same.
//     Of replicas racing to record one, the first wins: the others return
//     its ID, or a *clusterid.ConflictError when they were asked for
//     another. recorded reports that this call recorded it.
//
// The client needs list on configmaps in the Liqo namespace and, to record
// an ID, create on configmaps there and on namespaces.
func EnsureClusterID(ctx context.Context, client kubernetes.Interface, want string, opts *ClusterIDOptions) (id string, recorded bool, err error) {
	o := ClusterIDOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = keys.DefaultNamespace
	}
	if o.HelmRelease == "" {
		o.HelmRelease = "liqo"
	}
	if want != "" {
		if err := clusterid.Validate(want); err != nil {
			return "", false, err
		}
	}
	existing, err := recordedClusterID(ctx, client, o.Namespace)
	switch {
	case err != nil:
		return "", false, err
	case existing != "":
		return checkRecorded(existing, want, o.Namespace)
	case want != "":
		id = want
	default:
		if id, err = clusterid.Generate(o.Rand); err != nil {
			return "", false, err
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", false, wrap(err, "creating", "Namespace", "", o.Namespace)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      clusterid.RecordName,
			Namespace: o.Namespace,
			Labels: map[string]string{
				clusterid.RecordLabel: clusterid.RecordLabelValue,
				// Helm adopts an object that carries its ownership metadata.
				"app.kubernetes.io/managed-by": "Helm",
			},
			Annotations: map[string]string{
				"meta.helm.sh/release-name":      o.HelmRelease,
				"meta.helm.sh/release-namespace": o.Namespace,
			},
		},
		Data: map[string]string{clusterid.RecordKey: id},
	}
	_, err = client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Another replica recorded one first.
		existing, err := recordedClusterID(ctx, client, o.Namespace)
		if err == nil && existing == "" {
			err = fmt.Errorf("%w: ConfigMap %s/%s exists without the label %s=%s", clusterid.ErrInvalid,
				o.Namespace, clusterid.RecordName, clusterid.RecordLabel, clusterid.RecordLabelValue)
		}
		if err != nil {
			return "", false, err
		}
		return checkRecorded(existing, want, o.Namespace)
	case err != nil:
		return "", false, wrap(err, "creating", "ConfigMap", o.Namespace, clusterid.RecordName)
	}
	return id, true, nil
}

// checkRecorded returns the recorded ID, or a *clusterid.ConflictError when
// want is set and differs from it.
func checkRecorded(recorded, want, namespace string) (string, bool, error) {
	if want != "" && want != recorded {
		return "", false, &clusterid.ConflictError{Asked: want, Recorded: recorded,
			Where: fmt.Sprintf("ConfigMap %s/%s", namespace, clusterid.RecordName)}
	}
	return recorded, false, nil
}

// recordedClusterID returns the ID the cluster records in namespace, "" when
// it records none.
func recordedClusterID(ctx context.Context, client kubernetes.Interface, namespace string) (string, error) {
	list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{clusterid.RecordLabel: clusterid.RecordLabelValue}.String(),
	})
	if err != nil {
		return "", wrap(err, "listing", "ConfigMap", namespace, clusterid.RecordName)
	}
	switch len(list.Items) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: %d ConfigMaps labelled %s=%s in %s", clusterid.ErrAmbiguous, len(list.Items),
			clusterid.RecordLabel, clusterid.RecordLabelValue, namespace)
	}
	cm := list.Items[0]
	id := cm.Data[clusterid.RecordKey]
	if err := clusterid.Validate(id); err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s, key %s: %w", namespace, cm.Name, clusterid.RecordKey, err)
	}
	return id, nil
}

// RecordedClusterID returns the ID the cluster records in the Liqo
// namespace (keys.DefaultNamespace when empty), as EnsureClusterID reads
// it, or "" when it records none. It writes nothing. Several records are a
// clusterid.ErrAmbiguous error, a record without a valid ID a
// clusterid.ErrInvalid one; API errors are wrapped, so apierrors.IsForbidden
// tells a client that may not list ConfigMaps there.
func RecordedClusterID(ctx context.Context, client kubernetes.Interface, namespace string) (string, error) {
	if namespace == "" {
		namespace = keys.DefaultNamespace
	}
	return recordedClusterID(ctx, client, namespace)
}
