package fake

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// object is what the generic store keeps: a Kubernetes object that can copy itself.
type object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// objects is a concurrency-safe map of Kubernetes objects by namespace and name.
type objects[T object[T]] struct {
	mu      sync.Mutex
	items   map[types.NamespacedName]T
	version int
	writes  int
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

func (s *objects[T]) get(namespace, name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.items[key(namespace, name)]
	if !ok {
		var zero T
		return zero, false
	}
	return obj.DeepCopy(), true
}

// apply stores a copy of obj, keeping the UID and creation time of the object
// it replaces, and returns a copy of what is stored.
func (s *objects[T]) apply(obj T) T { return s.applyMerged(obj, nil) }

// applyMerged is apply, with merge called under the lock to carry what it
// chooses from the stored object into the new one.
func (s *objects[T]) applyMerged(obj T, merge func(prev, next T)) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[types.NamespacedName]T{}
	}
	k := key(obj.GetNamespace(), obj.GetName())
	next := obj.DeepCopy()
	if prev, ok := s.items[k]; ok {
		if merge != nil {
			merge(prev, next)
		}
		next.SetUID(prev.GetUID())
		next.SetCreationTimestamp(prev.GetCreationTimestamp())
		next.SetResourceVersion(prev.GetResourceVersion())
		if reflect.DeepEqual(prev, next) {
			return prev.DeepCopy()
		}
	} else {
		next.SetUID(types.UID("uid-" + strconv.Itoa(len(s.items)+s.writes+1) + "-" + k.Name))
	}
	s.version++
	s.writes++
	next.SetResourceVersion(strconv.Itoa(s.version))
	s.items[k] = next
	return next.DeepCopy()
}

func (s *objects[T]) delete(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[key(namespace, name)]; ok {
		delete(s.items, key(namespace, name))
		s.writes++
	}
}

// list returns copies of the objects in namespace ("" for all), by name.
func (s *objects[T]) list(namespace string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for k, obj := range s.items {
		if namespace == "" || k.Namespace == namespace {
			out = append(out, obj.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out
}

// Objects returns copies of the stored objects in namespace ("" for all),
// sorted by namespace and name.
func (s *objects[T]) Objects(namespace string) []T { return s.list(namespace) }

// Writes returns the number of creates, updates and deletes that changed
// something.
func (s *objects[T]) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}
