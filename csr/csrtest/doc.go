// Package csrtest is the conformance suite of the ports of package csr:
// RunSigner checks a csr.Signer, RunApprover a csr.Approver and RunCache a
// csr.Cache.
//
// # csr.Signer
//
// RunSigner checks that Sign, with an approving Approver, returns a PEM
// chain whose leaf carries the CSR's subject and public key, is not a CA,
// is for client authentication, chains to the CA bundle the harness names
// and passes csr.CheckIssued for the request made (no other usage, no
// longer lifetime than asked); that the requested Lifetime is honoured up
// to the signer's cap (SignerHarness.MaxLifetime), allowing NotBefore to be
// backdated by five minutes and ten minutes of slack on NotAfter, as
// Kubernetes' signer backdates and rounds; that signing the same CSR twice
// succeeds both times with certificates for the same key; that five
// concurrent Signs of different CSRs all succeed; that a denying Approver
// makes Sign fail with an error for which errors.As finds a
// *csr.DeniedError; and that Sign with a cancelled context fails with an
// error wrapping context.Canceled (or context.DeadlineExceeded, for a
// signer that also bounds its wait).
//
// Every Sign the suite makes is bounded by SignTimeout, so a signer that
// never hears back from its approver or its API server fails the test
// instead of hanging it.
//
// # csr.Approver
//
// RunApprover checks that Approve returns nil for requests the Approver
// approves, also when called concurrently, and fails with an error wrapping
// context.Canceled when its context is cancelled.
//
// # csr.Cache
//
// RunCache checks that Get of a key with no entry fails with an error
// wrapping csr.ErrNotFound; that Get returns what Put stored and Put
// replaces it; that entries of keys differing in ConsumerID or Slice are
// independent; that Delete removes an entry and succeeds when there is
// none; and that a call with a cancelled context fails with an error
// wrapping context.Canceled.
//
// # Real API servers
//
// Every test uses cluster IDs no other test uses (random, 19 characters),
// tells the harness about them before use (CacheHarness.Prepare; a
// Kubernetes adapter creates the tenant namespace there) and deletes
// nothing it does not need to, so the suites run against a real API server
// as well as against package fake.
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestCSRConformance(t *testing.T) {
//		c := testcluster.StartT(t)
//		client := kubernetes.NewForConfigOrDie(c.AdminConfig())
//		csrtest.RunCache(t, csrtest.CacheHarness{
//			New: func(t *testing.T) csr.Cache { return kube.NewCertificateCache(client) },
//			Prepare: func(t *testing.T, consumerID string) {
//				_, err := client.CoreV1().Namespaces().Create(t.Context(), tenant.Namespace(consumerID), metav1.CreateOptions{})
//				if err != nil && !apierrors.IsAlreadyExists(err) {
//					t.Fatal(err)
//				}
//			},
//			Parallel: true,
//		})
//		csrtest.RunSigner(t, csrtest.SignerHarness{
//			New: func(t *testing.T, a csr.Approver) (csr.Signer, []byte) {
//				return kube.NewCSRSigner(client, a), c.CA() // the cluster-signing CA
//			},
//			Approver: func(t *testing.T) csr.Approver { return kube.NewApprover(client) },
//			Parallel: true,
//		})
//	}
package csrtest
