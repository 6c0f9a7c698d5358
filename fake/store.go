package fake

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	owners  map[types.NamespacedName]owners
	version int
	writes  int
	// indexer, once set (indexBy), names the keys each object is found
	// under by byKeys; byKey holds them, kept current by every write.
	indexer func(T) []string
	byKey   map[string]map[types.NamespacedName]struct{}
	indexed atomic.Bool // indexer is set: indexBy need not lock
}

// owners records, per field of one object, who set it: kubepact through
// its ports, another component, or both, as an API server's managed fields
// do. Metadata fields are named "label/<key>", "annotation/<key>",
// "finalizer/<name>" and "owner/<uid>"; a store names its other fields.
type owners map[string]setBy

type setBy uint8

const (
	byKubepact setBy = 1 << iota
	byOthers
)

// others reports whether another component set field.
func (o owners) others(field string) bool { return o[field]&byOthers != 0 }

// metaFields returns the metadata fields obj sets, with their values.
func metaFields(obj metav1.Object) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetLabels() {
		out["label/"+k] = v
	}
	for k, v := range obj.GetAnnotations() {
		out["annotation/"+k] = v
	}
	for _, f := range obj.GetFinalizers() {
		out["finalizer/"+f] = ""
	}
	for _, r := range obj.GetOwnerReferences() {
		out["owner/"+string(r.UID)] = r.Kind + "/" + r.Name
	}
	return out
}

// mergeMeta sets into next, which holds what kubepact applies, the
// metadata of prev that next does not name and that is not kubepact's
// alone: what others set stays, and what kubepact set before and no
// longer applies goes.
func mergeMeta(prev, next metav1.Object, own owners) {
	keep := func(field string) bool { return own[field] != byKubepact }
	labels, annotations := maps.Clone(next.GetLabels()), maps.Clone(next.GetAnnotations())
	for k, v := range prev.GetLabels() {
		if _, ok := labels[k]; !ok && keep("label/"+k) {
			labels = setKey(labels, k, v)
		}
	}
	for k, v := range prev.GetAnnotations() {
		if _, ok := annotations[k]; !ok && keep("annotation/"+k) {
			annotations = setKey(annotations, k, v)
		}
	}
	next.SetLabels(labels)
	next.SetAnnotations(annotations)
	var finalizers []string
	for _, f := range prev.GetFinalizers() {
		if slices.Contains(next.GetFinalizers(), f) || keep("finalizer/"+f) {
			finalizers = append(finalizers, f)
		}
	}
	for _, f := range next.GetFinalizers() {
		if !slices.Contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	next.SetFinalizers(finalizers)
	var refs []metav1.OwnerReference
	applied := next.GetOwnerReferences()
	for _, r := range prev.GetOwnerReferences() {
		i := slices.IndexFunc(applied, func(a metav1.OwnerReference) bool { return a.UID == r.UID })
		switch {
		case i >= 0:
			refs = append(refs, applied[i])
		case keep("owner/" + string(r.UID)):
			refs = append(refs, r)
		}
	}
	for _, a := range applied {
		if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == a.UID }) {
			refs = append(refs, a)
		}
	}
	next.SetOwnerReferences(refs)
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
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

// applyOwned stores obj as kubepact applies it: obj's metadata is set over
// the stored object's, whose metadata others set stays (see mergeMeta), and
// merge, called under the lock, carries what it chooses of the rest from
// the stored object into the new one, and records other fields it owns.
// It returns a copy of what is stored.
func (s *objects[T]) applyOwned(obj T, merge func(prev, next T, own owners)) T {
	return s.store(obj, func(prev, next T, own owners) {
		mergeMeta(prev, next, own)
		if merge != nil {
			merge(prev, next, own)
		}
	}, func(own owners, _ T, _ bool) {
		for f, by := range own {
			if !strings.Contains(f, "/") {
				continue // not metadata: merge records it
			}
			if by &^= byKubepact; by == 0 {
				delete(own, f)
			} else {
				own[f] = by
			}
		}
		for f := range metaFields(obj) {
			own[f] |= byKubepact
		}
	})
}

// writeAsOther stores obj whole, as another component's client-side update
// does: the fields it changes or adds become that component's, and fields
// it drops are no one's. changed names the other fields it changes.
func (s *objects[T]) writeAsOther(obj T, changed func(prev T, exists bool) []string) T {
	return s.store(obj, nil, func(own owners, prev T, exists bool) {
		was := map[string]string{}
		if exists {
			was = metaFields(prev)
		}
		now := metaFields(obj)
		for f := range was {
			if _, ok := now[f]; !ok {
				delete(own, f)
			}
		}
		for f, v := range now {
			if old, ok := was[f]; !ok || old != v {
				own[f] |= byOthers
			}
		}
		if changed != nil {
			for _, f := range changed(prev, exists) {
				own[f] |= byOthers
			}
		}
	})
}

// applyMerged is apply, with merge called under the lock to carry what it
// chooses from the stored object into the new one.
func (s *objects[T]) applyMerged(obj T, merge func(prev, next T)) T {
	var m func(prev, next T, own owners)
	if merge != nil {
		m = func(prev, next T, _ owners) { merge(prev, next) }
	}
	return s.store(obj, m, nil)
}

// store stores a copy of obj under the lock: merge builds it from the stored
// object, and record, given the object stored before, updates its owners.
func (s *objects[T]) store(obj T, merge func(prev, next T, own owners), record func(own owners, prev T, exists bool)) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[types.NamespacedName]T{}
		s.owners = map[types.NamespacedName]owners{}
	}
	k := key(obj.GetNamespace(), obj.GetName())
	own := s.owners[k]
	if own == nil {
		own = owners{}
		s.owners[k] = own
	}
	next := obj.DeepCopy()
	prev, exists := s.items[k]
	if record != nil {
		defer record(own, prev, exists) // prev is not changed in place
	}
	if exists {
		if merge != nil {
			merge(prev, next, own)
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
	s.put(k, next)
	return next.DeepCopy()
}

// updateExisting stores a copy of the object namespace/name as change
// leaves it, as a write to a subresource does, and returns a copy of what is
// stored. It reports false, storing nothing, when there is no such object.
func (s *objects[T]) updateExisting(namespace, name string, change func(next T)) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(namespace, name)
	cur, ok := s.items[k]
	if !ok {
		var zero T
		return zero, false
	}
	next := cur.DeepCopy()
	change(next)
	if reflect.DeepEqual(cur, next) {
		return cur.DeepCopy(), true
	}
	s.version++
	s.writes++
	next.SetResourceVersion(strconv.Itoa(s.version))
	s.put(k, next)
	return next.DeepCopy(), true
}

// terminate removes from the object namespace/name the finalizers ours
// matches (none when nil) and deletes it, unless other finalizers stay:
// then it keeps the object with those and a deletionTimestamp, as an API
// server does.
func (s *objects[T]) terminate(namespace, name string, ours func(string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(namespace, name)
	cur, ok := s.items[k]
	if !ok {
		return
	}
	others := slices.Clone(cur.GetFinalizers())
	if ours != nil {
		others = slices.DeleteFunc(others, ours)
	}
	s.writes++
	if len(others) == 0 {
		s.remove(k)
		return
	}
	next := cur.DeepCopy()
	next.SetFinalizers(others)
	if next.GetDeletionTimestamp() == nil {
		now := metav1.Now()
		next.SetDeletionTimestamp(&now)
	}
	s.version++
	next.SetResourceVersion(strconv.Itoa(s.version))
	s.put(k, next)
}

func (s *objects[T]) delete(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[key(namespace, name)]; ok {
		s.remove(key(namespace, name))
		s.writes++
	}
}

// put stores obj under k, with s.mu held, and indexes it in place of what
// it replaces.
func (s *objects[T]) put(k types.NamespacedName, obj T) {
	if prev, ok := s.items[k]; ok {
		s.unindex(k, prev)
	}
	s.items[k] = obj
	s.index(k, obj)
}

// index adds the index keys of obj, stored under k, with s.mu held.
func (s *objects[T]) index(k types.NamespacedName, obj T) {
	if s.indexer == nil {
		return
	}
	for _, ik := range s.indexer(obj) {
		if s.byKey[ik] == nil {
			s.byKey[ik] = map[types.NamespacedName]struct{}{}
		}
		s.byKey[ik][k] = struct{}{}
	}
}

// remove forgets the object under k and who set its fields, with s.mu held.
func (s *objects[T]) remove(k types.NamespacedName) {
	if prev, ok := s.items[k]; ok {
		s.unindex(k, prev)
	}
	delete(s.items, k)
	delete(s.owners, k)
}

// unindex drops the index keys of obj, stored under k, with s.mu held.
func (s *objects[T]) unindex(k types.NamespacedName, obj T) {
	if s.indexer == nil {
		return
	}
	for _, ik := range s.indexer(obj) {
		delete(s.byKey[ik], k)
		if len(s.byKey[ik]) == 0 {
			delete(s.byKey, ik)
		}
	}
}

// indexBy makes byKeys find each object under the keys indexer names for
// it, as an informer's indexer does, and indexes what s holds already:
// every write from then on keeps the index current, so a lookup costs what
// it finds, not what s holds. The first call sets the indexer; later ones
// do nothing, so a store whose zero value is ready to use can call it
// before each lookup. indexer must name the same keys for the same object.
func (s *objects[T]) indexBy(indexer func(T) []string) {
	if s.indexed.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexer != nil {
		return
	}
	defer s.indexed.Store(true)
	s.indexer = indexer
	s.byKey = map[string]map[types.NamespacedName]struct{}{}
	for k, obj := range s.items {
		s.index(k, obj)
	}
}

// byKeys returns copies of the objects indexed (indexBy) under any of
// keys, each once, sorted by namespace and name as list sorts them. It
// finds nothing before indexBy.
func (s *objects[T]) byKeys(keys ...string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := map[types.NamespacedName]struct{}{}
	for _, ik := range keys {
		for k := range s.byKey[ik] {
			found[k] = struct{}{}
		}
	}
	out := make([]T, 0, len(found))
	for k := range found {
		out = append(out, s.items[k].DeepCopy())
	}
	slices.SortFunc(out, byNamespacedName)
	return out
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
	slices.SortFunc(out, byNamespacedName)
	return out
}

// byNamespacedName orders objects by "namespace/name".
func byNamespacedName[T metav1.Object](a, b T) int {
	return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
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
