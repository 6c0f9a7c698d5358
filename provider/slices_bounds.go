package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/resourceslice"
)

// issueSlice returns the certificate of slice s for req, cached under key,
// as csr.Issue does, but asks the signer for a request it has not signed
// for s only within Options.SliceBounds, tightened by the policy an
// AuthorizedConsumer commits for the consumer (admitSlice): over a bound
// it returns the *resourceslice.BoundError, and nothing is signed or
// written. The certificate cached for s, for the same request, is returned
// or re-signed when due whatever the bounds.
func (p *Provider) issueSlice(ctx context.Context, s *authv1beta1.ResourceSlice, key csr.CacheKey, req csr.Request, now time.Time) ([]byte, error) {
	var held *x509.Certificate
	switch e, err := p.ports.Certificates.Get(ctx, key); {
	case err == nil:
		if cert := csr.Cached(e, req, now); cert != nil {
			return cert, nil
		}
		if !bytes.Equal(e.CSR, req.CSR.PEM()) {
			// Another request: the certificate held for the old one, if
			// it is one, is what the time between two keys counts from.
			held, _ = csr.ParseCertificate(e.Certificate)
			if err := p.admitSlice(ctx, s, key.ConsumerID, held, req, now); err != nil {
				return nil, err
			}
		}
	case errors.Is(err, csr.ErrNotFound):
		if err := p.admitSlice(ctx, s, key.ConsumerID, nil, req, now); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("reading certificate cache %s: %w", key.SecretName(), err)
	}
	cert, err := csr.SignChecked(ctx, p.ports.Signer, req, now)
	if err != nil {
		return nil, err
	}
	if err := p.ports.Certificates.Put(ctx, key, csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: cert}); err != nil {
		return nil, fmt.Errorf("writing certificate cache %s: %w", key.SecretName(), err)
	}
	// Issued: the same request again, once the cache lost it (the slice
	// deleted and made again), is a new signing.
	p.sliceLedger.of(key.ConsumerID).issued(s.Name, sha256.Sum256(req.CSR.PEM()))
	return cert, nil
}

// admitSlice decides whether a certificate for req, a request the provider
// has not signed for slice s of consumerID, may be asked of the signer
// (resourceslice.Bounds.Admit), and records it in the consumer's ledger
// when it may. A request admitted that the signer has not issued yet (it
// is pending, or the signing failed and is retried) is admitted again
// without being counted twice; one issued already is counted again.
//
// What it reads is the provider's or the API server's: the slices that
// exist (their creationTimestamp, which the API server sets), the
// certificate the provider holds for s, and the ledger. The ledger is in
// memory; the first decision for a consumer in a process fills it from the
// certificates the provider holds for the consumer's live slices, by their
// NotBefore (which the signer sets, a few minutes early with the CSR API).
// A restart therefore forgets only the certificates of slices deleted or
// given another CSR in the last hour, and requests the signer had not
// issued: it cannot lose more than one RateWindow's worth, and a peer has
// no way to restart the provider.
func (p *Provider) admitSlice(ctx context.Context, s *authv1beta1.ResourceSlice, consumerID string, held *x509.Certificate, req csr.Request, now time.Time) error {
	bounds, err := p.sliceBounds(ctx, consumerID)
	if err != nil {
		return err
	}
	if bounds.MaxSlices < 0 && bounds.RekeyInterval < 0 && bounds.CertificatesPerHour < 0 {
		return nil
	}
	l := p.sliceLedger.of(consumerID)
	l.mu.Lock()
	defer l.mu.Unlock()
	request := sha256.Sum256(req.CSR.PEM())
	if l.pending(s.Name, request, now) {
		return nil
	}
	if held == nil && bounds.MaxSlices >= 0 && l.full != nil && l.full.covers(s, now) {
		// The slices older than the one last refused are older than s: a
		// flood is refused without listing it again for each slice.
		return &resourceslice.BoundError{Err: resourceslice.ErrSliceLimit, Slice: s.Namespace + "/" + s.Name,
			Limit: bounds.MaxSlices, Until: l.full.until}
	}
	var live []authv1beta1.ResourceSlice
	if (held == nil && bounds.MaxSlices >= 0) || (!l.filled && bounds.CertificatesPerHour >= 0) {
		var err error
		if live, err = p.ports.Slices.List(ctx, s.Namespace); err != nil {
			return fmt.Errorf("listing the ResourceSlices of %s: %w", s.Namespace, err)
		}
	}
	if !l.filled && bounds.CertificatesPerHour >= 0 {
		if err := p.fillLedger(ctx, l, consumerID, live, now); err != nil {
			return err
		}
	}
	if err := bounds.Admit(resourceslice.Signing{Slice: s, Live: live, Held: held, Issued: l.times(now), Now: now}); err != nil {
		if errors.Is(err, resourceslice.ErrSliceLimit) {
			l.full = &fullMark{created: s.CreationTimestamp.Time, name: s.Name, until: now.Add(sliceCountRecheck)}
		}
		return err
	}
	l.add(ledgerEntry{at: now, slice: s.Name, request: request, pending: true})
	return nil
}

// sliceBounds returns the bounds on the slices of consumerID: the
// provider's (Options.SliceBounds, with their defaults), and, where an
// AuthorizedConsumer commits the consumer, its policy where it is tighter.
func (p *Provider) sliceBounds(ctx context.Context, consumerID string) (resourceslice.Bounds, error) {
	bounds := p.opts.SliceBounds.WithDefaults()
	c, err := commitment(ctx, p.ports.Commitments, consumerID)
	if err != nil || c == nil {
		return bounds, err
	}
	return c.Policy.Tighten(bounds), nil
}

// fillLedger adds to l the certificates the provider holds for the live
// slices of consumerID that were issued in the RateWindow before now.
func (p *Provider) fillLedger(ctx context.Context, l *consumerLedger, consumerID string, live []authv1beta1.ResourceSlice, now time.Time) error {
	for _, o := range live {
		e, err := p.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: o.Name})
		switch {
		case errors.Is(err, csr.ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("reading the certificate cache of ResourceSlice %s/%s: %w", o.Namespace, o.Name, err)
		}
		cert, err := csr.ParseCertificate(e.Certificate)
		if err != nil || !cert.NotBefore.After(now.Add(-resourceslice.RateWindow)) {
			continue
		}
		l.add(ledgerEntry{at: cert.NotBefore, slice: o.Name, request: sha256.Sum256(e.CSR)})
	}
	l.filled = true
	return nil
}

// sliceCountRecheck is how long a consumer's slices, counted over
// resourceslice.Bounds.MaxSlices, are not counted again for its younger
// slices, unless one of its slices is released first (ForgetSlice, a
// denial). A slice refused without a count is judged again then, when it
// would have seen a slice deleted that the provider did not release (one
// deleted before it was ever judged).
const sliceCountRecheck = 30 * time.Second

// fullMark records that the consumer's slices older than the slice
// (created, name) were found at least resourceslice.Bounds.MaxSlices, until
// until.
type fullMark struct {
	created time.Time
	name    string
	until   time.Time
}

// covers reports whether s is no older than the slice the mark was made
// for, and the mark still holds at now.
func (m *fullMark) covers(s *authv1beta1.ResourceSlice, now time.Time) bool {
	if !now.Before(m.until) {
		return false
	}
	c := s.CreationTimestamp.Time
	return c.After(m.created) || c.Equal(m.created) && s.Name >= m.name
}

// released forgets the count of consumerID's slices: one was released, a
// waiting slice may take its place.
func (s *sliceLedgers) released(consumerID string) {
	s.mu.Lock()
	l := s.m[consumerID]
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	l.full = nil
	l.mu.Unlock()
}

// sliceLedgers are the ledgers of the consumers, by ID.
type sliceLedgers struct {
	mu sync.Mutex
	m  map[string]*consumerLedger
}

func (s *sliceLedgers) of(consumerID string) *consumerLedger {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*consumerLedger{}
	}
	l, ok := s.m[consumerID]
	if !ok {
		l = &consumerLedger{}
		s.m[consumerID] = l
	}
	return l
}

// consumerLedger holds when the requests of one consumer's slices that the
// provider admitted in the last RateWindow were admitted. Its lock is held
// across a decision and its record, so two slices of a consumer are never
// admitted on the same count.
type consumerLedger struct {
	mu      sync.Mutex
	filled  bool
	entries []ledgerEntry
	full    *fullMark // nil: count the slices
}

// ledgerEntry is one admitted request: a digest of its CSR, the slice,
// when, and whether it is still to be issued.
type ledgerEntry struct {
	at      time.Time
	slice   string
	request [sha256.Size]byte
	pending bool
}

// prune drops the entries out of the window at now.
func (l *consumerLedger) prune(now time.Time) {
	from := now.Add(-resourceslice.RateWindow)
	kept := l.entries[:0]
	for _, e := range l.entries {
		if e.at.After(from) {
			kept = append(kept, e)
		}
	}
	clear(l.entries[len(kept):])
	l.entries = kept
}

// pending reports whether request of slice was admitted in the window and
// is not issued yet.
func (l *consumerLedger) pending(slice string, request [sha256.Size]byte, now time.Time) bool {
	l.prune(now)
	for _, e := range l.entries {
		if e.pending && e.slice == slice && e.request == request {
			return true
		}
	}
	return false
}

// issued marks request of slice issued.
func (l *consumerLedger) issued(slice string, request [sha256.Size]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.entries {
		if l.entries[i].pending && l.entries[i].slice == slice && l.entries[i].request == request {
			l.entries[i].pending = false
		}
	}
}

// times returns when the entries in the window were admitted.
func (l *consumerLedger) times(now time.Time) []time.Time {
	l.prune(now)
	out := make([]time.Time, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.at
	}
	return out
}

func (l *consumerLedger) add(e ledgerEntry) { l.entries = append(l.entries, e) }
