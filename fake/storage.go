package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

var (
	_ resourceslice.StorageClassLister = (*StorageClasses)(nil)
	_ resourceslice.Policy             = (*SlicePolicy)(nil)
)

// StorageClasses is an in-memory resourceslice.StorageClassLister. Put
// and Delete, which are not part of the port, plant and remove classes as
// an administrator does.
type StorageClasses struct {
	mu      sync.Mutex
	classes map[string]*storagev1.StorageClass
}

// Put stores c whole, replacing a class of the same name.
func (s *StorageClasses) Put(c *storagev1.StorageClass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.classes == nil {
		s.classes = map[string]*storagev1.StorageClass{}
	}
	s.classes[c.Name] = c.DeepCopy()
}

// Delete removes the class name, if any.
func (s *StorageClasses) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.classes, name)
}

// List returns the stored classes, by name.
func (s *StorageClasses) List(ctx context.Context) ([]storagev1.StorageClass, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storagev1.StorageClass
	for _, name := range slices.Sorted(maps.Keys(s.classes)) {
		out = append(out, *s.classes[name].DeepCopy())
	}
	return out, nil
}

// SlicePolicy is an in-memory resourceslice.Policy: it caps every slice at
// the limits SetLimits sets (none at first), and refuses, with an error
// wrapping resourceslice.ErrRefused, the slices Refuse names. Calls counts
// the calls of Limits.
type SlicePolicy struct {
	mu     sync.Mutex
	limits corev1.ResourceList
	refuse map[string]string
	calls  int
}

// SetLimits caps every slice at limits (nil: no cap).
func (p *SlicePolicy) SetLimits(limits corev1.ResourceList) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits = limits.DeepCopy()
}

// Refuse refuses the slice namespace/name, saying why.
func (p *SlicePolicy) Refuse(namespace, name, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse == nil {
		p.refuse = map[string]string{}
	}
	p.refuse[namespace+"/"+name] = why
}

// Calls returns how many times Limits was called.
func (p *SlicePolicy) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// Limits returns the limits of s, or refuses it.
func (p *SlicePolicy) Limits(ctx context.Context, s *authv1beta1.ResourceSlice) (corev1.ResourceList, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	key := s.Namespace + "/" + s.Name
	if why, ok := p.refuse[key]; ok {
		return nil, fmt.Errorf("%w: %s: %s", resourceslice.ErrRefused, key, strings.TrimSpace(why))
	}
	return p.limits.DeepCopy(), nil
}
