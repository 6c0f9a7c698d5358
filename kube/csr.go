package kube

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
)

const (
	// CSRGenerateName prefixes the names of the CSR objects kubepact
	// creates: followed by the request's digest (CSRHashLabel) or, when an
	// object it may not use holds that name, by generated characters.
	CSRGenerateName = "liqo-identity-"
	// CSRLabel marks the CSR objects of tenant identities.
	CSRLabel = "liqo.io/remote-tenant-csr"
	// CSRHashLabel carries a digest of the request, to find an existing
	// object for the same CSR.
	CSRHashLabel = "kubepact.io/request-sha256"
	// MinExpirationSeconds is the shortest lifetime the CSR API accepts.
	MinExpirationSeconds = 600
)

// ErrForeignCSR reports a CertificateSigningRequest that is not the one
// kubepact asked for: it asks for another request, signer or usages, or it
// was replaced by another object (another UID) since it was checked.
// Approver refuses such an object with an error that wraps both
// ErrForeignCSR and a *csr.DeniedError, and leaves it untouched.
var ErrForeignCSR = errors.New("CertificateSigningRequest is not the one kubepact asked for")

// CSRSigner is a csr.Signer over the certificates.k8s.io/v1 API, for the
// signer kubernetes.io/kube-apiserver-client.
//
// Sign re-uses an existing object found by CSRLabel and CSRHashLabel only
// when it is the object Sign would create: the same spec.request, the
// signer kubernetes.io/kube-apiserver-client, exactly kubepact's usages
// (digital signature and client auth, and key encipherment for an RSA key),
// the same spec.expirationSeconds, and spec.username the user its client
// authenticates as. Anyone allowed to create CertificateSigningRequests can
// plant an object with kubepact's labels and the consumer's request but a
// longer lifetime, other usages, another signer; Sign leaves every such
// object alone, neither approving nor re-using it, and creates its own.
//
// Sign learns its user from the response to its own create or, when an
// existing object is a candidate before that, from one SelfSubjectReview
// (allowed to every authenticated user by the default RBAC policy) per
// CSRSigner. When the API server does not serve or allow the review, Sign
// re-uses nothing and creates a new object every time.
//
// Sign approves the object through its Approver, holding the approval to
// the object's UID when the Approver offers ApproveUID (as *Approver does),
// and checks the issued certificate with csr.CheckIssued, against the real
// clock that the API server's signer also uses, before it returns it.
//
// With CSRSignerOptions.NoWait, Sign never waits: once the object is
// submitted and approved but not yet issued, it returns an error wrapping
// csr.ErrPending, and a later Sign with the same request finds the same
// object and returns its certificate once issued. Every object Sign creates
// carries CSRLabel, CSRHashLabel and, when the request's subject names a
// consumer cluster ID, clusterid.Label, so that a controller watching the
// objects can find what to requeue.
type CSRSigner struct {
	client   kubernetes.Interface
	approver csr.Approver
	clock    clock.PassiveClock
	noWait   bool
	waitFor  time.Duration
	updates  *CSRUpdates

	mu   sync.Mutex
	user string // the user client authenticates as, once known
	// known maps the CSRHashLabel of a request to the object Sign last
	// created or re-used for it, which the next Sign of the request (the
	// certificate issued) reads by name, instead of listing.
	known map[string]string
	// abandoned are the objects a Sign returned csr.ErrPending for and no
	// Sign has settled since (Awaited); past maxKnown of them, overflow
	// makes Awaited answer yes for every object from then on.
	abandoned map[string]struct{}
	overflow  bool
}

// maxKnown bounds CSRSigner.known: past it, the names are forgotten, and
// Sign lists again.
const maxKnown = 4096

var _ csr.Signer = (*CSRSigner)(nil)

// NewCSRSigner returns a CSRSigner that approves its requests through
// approver (usually NewApprover over the same client) and waits for their
// certificates.
func NewCSRSigner(client kubernetes.Interface, approver csr.Approver) *CSRSigner {
	return NewCSRSignerWithOptions(client, approver, nil)
}

// CSRSignerOptions tunes NewCSRSignerWithOptions. The zero value, like a nil
// pointer, makes the CSRSigner of NewCSRSigner, which waits for every
// certificate.
type CSRSignerOptions struct {
	// NoWait makes Sign return an error wrapping csr.ErrPending, instead of
	// waiting, while the object it submitted and approved is not issued.
	// For controllers, which must not block a worker on the API server's
	// signer: they watch CertificateSigningRequests (CSRLabel) and Sign
	// again when one is issued, denied or failed.
	NoWait bool
	// Wait, with NoWait, is how long Sign waits for the object it approved
	// before returning csr.ErrPending: a certificate issued within it is
	// returned by the same Sign. A controller's worker then takes a
	// handshake from its Tenant to its status in one reconcile, at the
	// cost of being busy for at most Wait; consumers are served in the
	// order they came, as many at once as there are workers. Zero returns
	// at once.
	Wait time.Duration
	// Clock is the time certificates are judged at; nil means the real
	// clock.
	Clock clock.PassiveClock
	// Updates, when set, is where Sign learns that the object it approves
	// is issued, denied, failed or deleted, instead of a watch of its own:
	// a controller's informer on CertificateSigningRequests carrying
	// CSRLabel feeds it. An object found approved already is watched. An
	// informer that lags makes Sign wait longer, never take a stale
	// outcome: it checks the certificate it is handed as it checks one it
	// watched.
	Updates *CSRUpdates
}

// NewCSRSignerWithOptions returns a CSRSigner that approves its requests
// through approver, tuned by opts.
func NewCSRSignerWithOptions(client kubernetes.Interface, approver csr.Approver, opts *CSRSignerOptions) *CSRSigner {
	s := &CSRSigner{client: client, approver: approver, clock: clock.RealClock{}}
	if opts != nil {
		s.noWait, s.waitFor, s.updates = opts.NoWait, opts.Wait, opts.Updates
		if opts.Clock != nil {
			s.clock = opts.Clock
		}
	}
	return s
}

// Sign creates (or re-uses) a CertificateSigningRequest for r, approves it,
// waits for the certificate until ctx ends (or, with NoWait, returns an
// error wrapping csr.ErrPending while it is not issued), and checks it. A
// certificate that fails csr.CheckIssued is not returned: the error wraps
// csr.ErrBadCertificate.
func (s *CSRSigner) Sign(ctx context.Context, r csr.Request) ([]byte, error) {
	if r.CSR == nil {
		return nil, fmt.Errorf("%w: no checked CSR", csr.ErrFailed)
	}
	now := s.clock.Now()
	want := newCSRObject(r)
	obj, err := s.ensure(ctx, want, now)
	if err != nil {
		return nil, err
	}
	cert, done, err := outcomeOf(obj)
	if !done {
		if cert, err = s.approveAndWait(ctx, obj, r.CSR); errors.Is(err, csr.ErrPending) {
			return nil, err
		}
	}
	// Settled, or waited for: the name has served its purpose, and a later
	// Sign of the request (a retry, a renewal) lists again.
	s.forget(want.Labels[CSRHashLabel])
	s.settle(obj.Name)
	if err != nil {
		return nil, err
	}
	if _, err := csr.CheckIssued(cert, r, now); err != nil {
		return nil, fmt.Errorf("CertificateSigningRequest %s: %w", obj.Name, err)
	}
	return cert, nil
}

// newCSRObject returns the CertificateSigningRequest kubepact creates for r.
func newCSRObject(r csr.Request) *certificatesv1.CertificateSigningRequest {
	request := r.CSR.PEM()
	sum := sha256.Sum256(request)
	labels := map[string]string{CSRLabel: "true", CSRHashLabel: hex.EncodeToString(sum[:16])}
	if id := consumerOf(r.CSR); id != "" {
		labels[clusterid.Label] = id
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: CSRGenerateName,
			Labels:       labels,
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            usagesFor(r.CSR),
			ExpirationSeconds: expirationSeconds(r.Lifetime),
		},
	}
}

// consumerOf returns the consumer cluster ID that c's subject names: the
// CN of a ControlPlane request (O = liqo.io), the only O of a ResourceSlice
// request; "" when that is no valid cluster ID. It only labels the object:
// nothing is decided on it.
func consumerOf(c *csr.Checked) string {
	subject := c.Subject()
	id := subject.CommonName
	if len(subject.Organization) == 1 && subject.Organization[0] != csr.ControlPlaneOrganization {
		id = subject.Organization[0]
	}
	if clusterid.Validate(id) != nil {
		return ""
	}
	return id
}

// usagesFor returns the usages kubepact asks for c: digital signature and
// client auth, and key encipherment for an RSA key. Liqo asks for key
// encipherment whatever the key; kubepact does not for Ed25519 and ECDSA
// keys, which cannot encipher (TLS 1.3, and ECDHE in TLS 1.2, only sign
// with a client key): the certificate then claims nothing its key cannot
// do. Both sets are accepted by the kube-apiserver-client signer and by
// every API server, so a Liqo provider signs kubepact's CSRs and the
// reverse.
func usagesFor(c *csr.Checked) []certificatesv1.KeyUsage {
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, ok := c.PublicKey().(*rsa.PublicKey); ok {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	return usages
}

// expirationSeconds returns spec.expirationSeconds for lifetime: nil for the
// signer's default, else whole seconds, at least MinExpirationSeconds.
func expirationSeconds(lifetime time.Duration) *int32 {
	if lifetime <= 0 {
		return nil
	}
	secs := max(int32(min(lifetime/time.Second, 1<<31-1)), MinExpirationSeconds)
	return &secs
}

// specMismatch returns how got fails to ask for exactly what want does (the
// same request, signer, usages in any order and expirationSeconds), or ""
// when it does not.
func specMismatch(got, want *certificatesv1.CertificateSigningRequestSpec) string {
	sorted := func(u []certificatesv1.KeyUsage) []certificatesv1.KeyUsage {
		u = slices.Clone(u)
		slices.Sort(u)
		return u
	}
	seconds := func(p *int32) string {
		if p == nil {
			return "unset"
		}
		return strconv.Itoa(int(*p))
	}
	switch {
	case !bytes.Equal(got.Request, want.Request):
		return "another request"
	case got.SignerName != want.SignerName:
		return fmt.Sprintf("signer %q, want %q", got.SignerName, want.SignerName)
	case !slices.Equal(sorted(got.Usages), sorted(want.Usages)):
		return fmt.Sprintf("usages %q, want %q", got.Usages, want.Usages)
	case seconds(got.ExpirationSeconds) != seconds(want.ExpirationSeconds):
		return fmt.Sprintf("expirationSeconds %s, want %s", seconds(got.ExpirationSeconds), seconds(want.ExpirationSeconds))
	}
	return ""
}

// ensure returns kubepact's existing object for want's request, or creates
// one: first under the request's own name (CSRGenerateName and the
// request's digest), else, when that name is taken by an object it may not
// use (planted, or holding a certificate due for renewal), under a
// generated name. An existing object is kubepact's only when it is
// pending or issued, asks for exactly what want does, and was made by the
// user s's client authenticates as; ensure ignores any other. It reads the
// object it last used for the request by name, and lists the objects
// labelled with the request's digest, from the API server's watch cache,
// only when the request's own name is taken by one it may not use.
func (s *CSRSigner) ensure(ctx context.Context, want *certificatesv1.CertificateSigningRequest, now time.Time) (*certificatesv1.CertificateSigningRequest, error) {
	hash := want.Labels[CSRHashLabel]
	if obj := s.recalled(ctx, hash, want, now); obj != nil {
		return obj, nil
	}
	if obj, err := s.ensureNamed(ctx, hash, want, now); obj != nil || err != nil {
		return obj, err
	}
	if obj, err := s.listed(ctx, hash, want, now); obj != nil || err != nil {
		return obj, err
	}
	return s.create(ctx, hash, want)
}

// recalled returns the object s last used for the request of digest hash,
// read by name, when it is still reusable for want and was made by s's
// user; else it forgets it and returns nil.
func (s *CSRSigner) recalled(ctx context.Context, hash string, want *certificatesv1.CertificateSigningRequest, now time.Time) *certificatesv1.CertificateSigningRequest {
	name, user := s.recall(hash)
	if name == "" {
		return nil
	}
	obj, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err == nil && reusable(obj, want, now) && obj.Spec.Username == user {
		return obj
	}
	s.forget(hash)
	return nil
}

// ensureNamed creates want under the request's own name (CSRGenerateName
// and hash): created, it is kubepact's, with no list. When the name is
// taken, it returns the object holding it only when it would re-use a
// listed one (see own); else nil and no error.
func (s *CSRSigner) ensureNamed(ctx context.Context, hash string, want *certificatesv1.CertificateSigningRequest, now time.Time) (*certificatesv1.CertificateSigningRequest, error) {
	api := s.client.CertificatesV1().CertificateSigningRequests()
	named := want.DeepCopy()
	named.GenerateName, named.Name = "", CSRGenerateName+hash
	created, err := api.Create(ctx, named, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.learnUser(created.Spec.Username)
		s.remember(hash, created.Name)
		return created, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("creating CertificateSigningRequest: %w", err)
	}
	obj, err := api.Get(ctx, named.Name, metav1.GetOptions{})
	if err != nil || !reusable(obj, want, now) {
		return nil, nil
	}
	return s.own(ctx, hash, []*certificatesv1.CertificateSigningRequest{obj})
}

// listed returns a reusable object for want among those labelled with hash
// that s's user made (see own), or nil and no error when there is none.
//
// The list is served from the API server's watch cache (resourceVersion
// "0"): a consistent list of a cluster-scoped kind waits for that cache to
// catch up with etcd, which costs a handshake more than its CSR round. A
// list that misses an object created moments ago only costs a second
// object; what is re-used is checked all the same.
func (s *CSRSigner) listed(ctx context.Context, hash string, want *certificatesv1.CertificateSigningRequest, now time.Time) (*certificatesv1.CertificateSigningRequest, error) {
	list, err := s.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: CSRLabel + "=true," + CSRHashLabel + "=" + hash, ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("listing CertificateSigningRequests: %w", err)
	}
	var candidates []*certificatesv1.CertificateSigningRequest
	for i := range list.Items {
		if obj := &list.Items[i]; reusable(obj, want, now) {
			candidates = append(candidates, obj)
		}
	}
	return s.own(ctx, hash, candidates)
}

// own returns the first of candidates, reusable objects for the request of
// digest hash, that the user s's client authenticates as made, and
// remembers it; nil and no error when there is none or the user is
// unknown. It asks for the user only when there are candidates.
func (s *CSRSigner) own(ctx context.Context, hash string, candidates []*certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	if len(candidates) == 0 {
		return nil, nil
	}
	user, err := s.username(ctx)
	if err != nil {
		return nil, err
	}
	for _, obj := range candidates {
		if user != "" && obj.Spec.Username == user {
			s.remember(hash, obj.Name)
			return obj, nil
		}
	}
	return nil, nil
}

// create creates want under a generated name and remembers it.
func (s *CSRSigner) create(ctx context.Context, hash string, want *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	created, err := s.client.CertificatesV1().CertificateSigningRequests().Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating CertificateSigningRequest: %w", err)
	}
	// The API server sets spec.username to the user who created the object.
	s.learnUser(created.Spec.Username)
	s.remember(hash, created.Name)
	return created, nil
}

// reusable reports whether obj, found for want's request, may be used in
// its place, whoever made it: it is not being deleted, asks for exactly
// what want does, is neither denied nor failed, and holds no certificate
// due for renewal.
func reusable(obj, want *certificatesv1.CertificateSigningRequest, now time.Time) bool {
	return obj.DeletionTimestamp == nil && specMismatch(&obj.Spec, &want.Spec) == "" && !renewDue(obj, now) &&
		!hasCondition(obj, certificatesv1.CertificateDenied) && !hasCondition(obj, certificatesv1.CertificateFailed)
}

// recall returns the name of the object last used for the request of
// digest hash, and the user s's client authenticates as; "" when either is
// unknown.
func (s *CSRSigner) recall(hash string) (name, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user == "" {
		return "", ""
	}
	return s.known[hash], s.user
}

// remember records name as the object used for the request of digest hash.
func (s *CSRSigner) remember(hash, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil || len(s.known) >= maxKnown {
		s.known = make(map[string]string)
	}
	s.known[hash] = name
}

// forget drops what s remembers of the request of digest hash.
func (s *CSRSigner) forget(hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, hash)
}

// username returns the user s's client authenticates as: the one learnt
// from s's own create, else the answer of a SelfSubjectReview. It returns ""
// when the API server does not serve or allow the review.
func (s *CSRSigner) username(ctx context.Context) (string, error) {
	s.mu.Lock()
	user := s.user
	s.mu.Unlock()
	if user != "" {
		return user, nil
	}
	review, err := s.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("creating SelfSubjectReview: %w", err)
	}
	s.learnUser(review.Status.UserInfo.Username)
	return review.Status.UserInfo.Username, nil
}

func (s *CSRSigner) learnUser(user string) {
	if user == "" {
		return
	}
	s.mu.Lock()
	s.user = user
	s.mu.Unlock()
}

// uidApprover is an Approver that can hold its approval to one object, as
// *Approver does.
type uidApprover interface {
	ApproveUID(ctx context.Context, name string, uid types.UID, c *csr.Checked) error
}

// objectApprover is an Approver that can start from an object already read,
// as *Approver does.
type objectApprover interface {
	approveObject(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, c *csr.Checked) error
}

// approve approves obj through s's Approver, held to obj's UID when the
// Approver can, and from obj as read when the Approver can.
func (s *CSRSigner) approve(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, c *csr.Checked) error {
	if a, ok := s.approver.(objectApprover); ok {
		return a.approveObject(ctx, obj, c)
	}
	if a, ok := s.approver.(uidApprover); ok {
		return a.ApproveUID(ctx, obj.Name, obj.UID, c)
	}
	return s.approver.Approve(ctx, obj.Name, c)
}

// approveAndWait approves obj, unless it is approved already, and waits
// for its outcome (briefly, with NoWait). The watch starts while the
// approval is sent, so the certificate is seen as soon as it is issued.
func (s *CSRSigner) approveAndWait(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, c *csr.Checked) ([]byte, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		cert []byte
		err  error
	}
	if s.noWait && s.waitFor <= 0 {
		// Sign returns before the outcome, which may come as soon as the
		// object is approved.
		s.abandon(obj.Name)
	}
	var updates <-chan csrUpdate
	if s.updates != nil && !hasCondition(obj, certificatesv1.CertificateApproved) {
		// Before the approval, which the outcome follows. An object
		// approved already may have settled before this wait started:
		// its own watch, from the version read, misses nothing.
		var stop func()
		updates, stop = s.updates.subscribe(obj.UID)
		defer stop()
	}
	waited := make(chan outcome, 1)
	go func() {
		var o outcome
		if s.noWait {
			o.cert, o.err = s.waitBriefly(wctx, obj, updates)
		} else {
			o.cert, o.err = s.wait(wctx, obj, updates)
		}
		waited <- o
	}()
	if !hasCondition(obj, certificatesv1.CertificateApproved) {
		if err := s.approve(ctx, obj, c); err != nil {
			cancel()
			<-waited
			return nil, err
		}
	}
	o := <-waited
	return o.cert, o.err
}

// waitBriefly waits up to s.waitFor for obj, and returns an error wrapping
// csr.ErrPending when it is not settled by then (or at once, when waitFor is
// zero). The name of obj stays known, so the next Sign reads it again, and
// obj is Awaited from then on. An outcome that came as the wait ended is
// read once more, so that none falls between the wait and Awaited.
func (s *CSRSigner) waitBriefly(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, updates <-chan csrUpdate) ([]byte, error) {
	pending := fmt.Errorf("%w: CertificateSigningRequest %s is not issued yet", csr.ErrPending, obj.Name)
	if s.waitFor <= 0 {
		return nil, pending
	}
	wctx, cancel := context.WithTimeout(ctx, s.waitFor)
	defer cancel()
	cert, err := s.wait(wctx, obj, updates)
	if err == nil || wctx.Err() == nil || ctx.Err() != nil {
		return cert, err
	}
	s.abandon(obj.Name)
	cur, err := s.client.CertificatesV1().CertificateSigningRequests().Get(ctx, obj.Name, metav1.GetOptions{})
	if err == nil && cur.UID == obj.UID {
		if cert, done, outcome := outcomeOf(cur); done {
			return cert, outcome
		}
	}
	return nil, pending
}

// Awaited reports whether a Sign returned an error wrapping csr.ErrPending
// for the object name, and no Sign has returned its outcome since. A
// controller requeues what an awaited object settles, and need not for one
// whose outcome a Sign waited for and returned already: that handshake is
// done.
func (s *CSRSigner) Awaited(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.abandoned[name]
	return ok || s.overflow
}

// abandon records that a Sign returns csr.ErrPending for the object name.
func (s *CSRSigner) abandon(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abandoned == nil {
		s.abandoned = make(map[string]struct{})
	}
	if len(s.abandoned) >= maxKnown {
		s.overflow = true // every object is awaited, rather than one lost
		return
	}
	s.abandoned[name] = struct{}{}
}

// settle records that a Sign returned the outcome of the object name.
func (s *CSRSigner) settle(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.abandoned, name)
}

// wait watches obj, from the resourceVersion it was read at, or takes its
// updates when they come from CSRUpdates, until it is issued, denied,
// failed or deleted.
func (s *CSRSigner) wait(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, updates <-chan csrUpdate) ([]byte, error) {
	if updates != nil {
		for {
			select {
			case u := <-updates:
				if u.deleted {
					return nil, deletedBeforeIssued(obj.Name)
				}
				if cert, done, outcome := outcomeOf(u.obj); done {
					return cert, outcome
				}
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for CertificateSigningRequest %s to be issued: %w", obj.Name, ctx.Err())
			}
		}
	}
	api := s.client.CertificatesV1().CertificateSigningRequests()
	selector := fields.OneTermEqualSelector("metadata.name", obj.Name).String()
	watcher := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return api.Watch(ctx, o)
	}}
	var (
		cert    []byte
		outcome error
	)
	_, err := watchtools.Until(ctx, obj.ResourceVersion, watcher, func(ev watch.Event) (bool, error) {
		cur, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok || cur.UID != obj.UID {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			outcome = deletedBeforeIssued(obj.Name)
			return true, nil
		}
		var done bool
		cert, done, outcome = outcomeOf(cur)
		return done, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for CertificateSigningRequest %s to be issued: %w", obj.Name, ctx.Err())
		}
		return nil, fmt.Errorf("waiting for CertificateSigningRequest %s: %w", obj.Name, err)
	}
	return cert, outcome
}

// deletedBeforeIssued is the outcome of the object name deleted while Sign
// waited for it.
func deletedBeforeIssued(name string) error {
	return fmt.Errorf("%w: CertificateSigningRequest %s was deleted before it was issued", csr.ErrFailed, name)
}

// renewDue reports whether obj holds a certificate at or past the point a
// provider re-signs it (csr.RenewAt) at now. Such an object is not re-used:
// a renewal of the same CSR, within the hour before issued objects are
// collected, gets a new certificate, not the one being renewed.
//
// An object created at or after that point is the renewal itself: a signer
// that backdates its certificates by half their lifetime or more (the
// kube-controller-manager backdates by 5 minutes, whatever its
// --cluster-signing-duration) may issue certificates already past it, as
// csr.RenewAt falls between half and two thirds of the lifetime. Such an
// object is re-used until its certificate expires, so that renewing makes
// one object per certificate, never one per reconcile.
func renewDue(obj *certificatesv1.CertificateSigningRequest, now time.Time) bool {
	if len(obj.Status.Certificate) == 0 {
		return false
	}
	cert, err := csr.ParseCertificate(obj.Status.Certificate)
	if err != nil || now.Before(csr.RenewAt(cert)) {
		return false
	}
	if !obj.CreationTimestamp.Time.Before(csr.RenewAt(cert)) {
		return !now.Before(cert.NotAfter)
	}
	return true
}

// outcomeOf reports whether obj is settled: issued (with its certificate),
// denied (*csr.DeniedError) or failed (csr.ErrFailed).
func outcomeOf(obj *certificatesv1.CertificateSigningRequest) ([]byte, bool, error) {
	for _, c := range obj.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, &csr.DeniedError{Name: obj.Name, Reason: c.Reason, Message: c.Message}
		case certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("%w: CertificateSigningRequest %s: %s: %s", csr.ErrFailed, obj.Name, c.Reason, c.Message)
		}
	}
	if len(obj.Status.Certificate) > 0 {
		return obj.Status.Certificate, true, nil
	}
	return nil, false, nil
}

func hasCondition(obj *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range obj.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Approver is a csr.Approver that approves CertificateSigningRequests
// through the API server's approval subresource.
//
// It approves an object only when it asks for exactly the checked CSR:
// spec.request is the CSR's PEM, spec.signerName is
// kubernetes.io/kube-apiserver-client, and spec.usages are exactly
// kubepact's. It writes the approval to the object as it read it, so the API
// server holds the object's UID and resourceVersion as preconditions, and on
// a conflict it reads again and goes on only while the UID is the same: it
// never approves an object it did not check. Any other object it refuses
// with an error wrapping ErrForeignCSR and a *csr.DeniedError, and leaves
// untouched. It cannot tell the lifetime asked for or who asked; CSRSigner
// checks those, then calls ApproveUID with the UID of the object it checked.
type Approver struct {
	client kubernetes.Interface
}

var _ csr.Approver = (*Approver)(nil)

// NewApprover returns an Approver using client.
func NewApprover(client kubernetes.Interface) *Approver { return &Approver{client: client} }

// Approve marks the CertificateSigningRequest name as approved, held to the
// object it reads first.
func (a *Approver) Approve(ctx context.Context, name string, c *csr.Checked) error {
	return a.approve(ctx, name, "", c, nil)
}

// ApproveUID is Approve held to the object uid: it refuses the object name
// when it is another object, even one asking for the same.
func (a *Approver) ApproveUID(ctx context.Context, name string, uid types.UID, c *csr.Checked) error {
	if uid == "" {
		return fmt.Errorf("approving CertificateSigningRequest %s: %w", name, refusal(name, "no UID to hold the approval to"))
	}
	return a.approve(ctx, name, uid, c, nil)
}

// approveObject is ApproveUID of obj, checked and updated as read (it
// carries its UID and resourceVersion), and read again only when the API
// server answers that it changed since.
func (a *Approver) approveObject(ctx context.Context, obj *certificatesv1.CertificateSigningRequest, c *csr.Checked) error {
	if obj.UID == "" {
		return fmt.Errorf("approving CertificateSigningRequest %s: %w", obj.Name, refusal(obj.Name, "no UID to hold the approval to"))
	}
	return a.approve(ctx, obj.Name, obj.UID, c, obj.DeepCopy())
}

// approve approves the object name, held to uid, or to the UID it first
// reads when uid is empty. It starts from read, when not nil, instead of
// reading the object.
func (a *Approver) approve(ctx context.Context, name string, uid types.UID, c *csr.Checked, read *certificatesv1.CertificateSigningRequest) error {
	if c == nil {
		return fmt.Errorf("%w: approving CertificateSigningRequest %s: no checked CSR", csr.ErrFailed, name)
	}
	api := a.client.CertificatesV1().CertificateSigningRequests()
	err := retryOnConflict(ctx, func() error {
		obj := read
		read = nil
		if obj == nil {
			var err error
			if obj, err = api.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if uid == "" {
			uid = obj.UID
		}
		if obj.UID != uid {
			return refusal(name, fmt.Sprintf("replaced: UID %s, want %s", obj.UID, uid))
		}
		// The lifetime is the caller's to check: compare everything else.
		want := certificatesv1.CertificateSigningRequestSpec{
			Request:           c.PEM(),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            usagesFor(c),
			ExpirationSeconds: obj.Spec.ExpirationSeconds,
		}
		if why := specMismatch(&obj.Spec, &want); why != "" {
			return refusal(name, why)
		}
		if hasCondition(obj, certificatesv1.CertificateDenied) {
			_, _, err := outcomeOf(obj)
			return err
		}
		if hasCondition(obj, certificatesv1.CertificateApproved) {
			return nil
		}
		obj.Status.Conditions = append(obj.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateApproved,
			Status:         corev1.ConditionTrue,
			Reason:         "KubepactApprove",
			Message:        "Tenant verified by kubepact",
			LastUpdateTime: metav1.Now(),
		})
		// obj carries the UID and resourceVersion read: the API server
		// answers with a conflict if the object changed or was replaced.
		_, err := api.UpdateApproval(ctx, name, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: approving CertificateSigningRequest %s: %w", csr.ErrFailed, name, err)
		}
		return fmt.Errorf("approving CertificateSigningRequest %s: %w", name, err)
	}
	return nil
}

// refusal is the error with which Approver refuses the object name.
func refusal(name, why string) error {
	return fmt.Errorf("%w: %w", ErrForeignCSR, &csr.DeniedError{Name: name, Reason: "ForeignRequest", Message: why})
}
