package kube

import (
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// CSRUpdates hands the CertificateSigningRequests an informer delivers to
// the CSRSigners waiting for them (CSRSignerOptions.Updates), so that a
// controller that watches CertificateSigningRequests already opens no
// watch of its own per certificate. Add it to the informer as an event
// handler; it keeps nothing but the waits in progress.
type CSRUpdates struct {
	mu      sync.Mutex
	waiting map[types.UID]map[chan csrUpdate]struct{}
}

// csrUpdate is an object delivered, or its deletion.
type csrUpdate struct {
	obj     *certificatesv1.CertificateSigningRequest
	deleted bool
}

var _ toolscache.ResourceEventHandler = (*CSRUpdates)(nil)

// NewCSRUpdates returns a CSRUpdates with no wait in progress.
func NewCSRUpdates() *CSRUpdates {
	return &CSRUpdates{waiting: map[types.UID]map[chan csrUpdate]struct{}{}}
}

// OnAdd hands obj to the wait for it, if any.
func (u *CSRUpdates) OnAdd(obj any, _ bool) { u.deliver(obj, false) }

// OnUpdate hands obj to the wait for it, if any.
func (u *CSRUpdates) OnUpdate(_, obj any) { u.deliver(obj, false) }

// OnDelete tells the wait for obj, if any, that it is gone.
func (u *CSRUpdates) OnDelete(obj any) {
	if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = gone.Obj
	}
	u.deliver(obj, true)
}

// deliver hands obj to the waits for its UID, replacing any update a wait
// has yet to take: only the latest state counts.
func (u *CSRUpdates) deliver(obj any, deleted bool) {
	c, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for ch := range u.waiting[c.UID] {
		select {
		case <-ch:
		default:
		}
		ch <- csrUpdate{obj: c, deleted: deleted}
	}
}

// subscribe starts a wait for the object uid and returns the channel its
// updates come on, and the function that ends the wait.
func (u *CSRUpdates) subscribe(uid types.UID) (<-chan csrUpdate, func()) {
	ch := make(chan csrUpdate, 1)
	u.mu.Lock()
	if u.waiting[uid] == nil {
		u.waiting[uid] = map[chan csrUpdate]struct{}{}
	}
	u.waiting[uid][ch] = struct{}{}
	u.mu.Unlock()
	return ch, func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		delete(u.waiting[uid], ch)
		if len(u.waiting[uid]) == 0 {
			delete(u.waiting, uid)
		}
	}
}
