// Package tenanttest is the conformance suite of the ports of package
// tenant: RunNamespaces checks a tenant.Namespaces, RunStore a tenant.Store.
//
// # tenant.Namespaces
//
// RunNamespaces checks that Ensure creates a namespace with ns's labels,
// adds and updates labels on an existing one while keeping the labels it
// does not name, succeeds when nothing changes and when called by many
// goroutines at once (no label is lost); that Delete succeeds, again when
// the namespace is already gone or never existed; and that a call with a
// cancelled context fails with an error wrapping context.Canceled. Reading
// the contract's "brings the labels up to ns's" as a merge follows the
// doc comment ("succeeds when nothing needs to change") and is the only
// reading a real API server allows: it labels every namespace
// kubernetes.io/metadata.name itself.
//
// The port cannot read a namespace back, so NamespacesHarness.New returns a
// getter beside it. After Delete the suite accepts a namespace that is gone
// or one that is terminating (deletionTimestamp set), as a real API server
// leaves it until its content is removed.
//
// # tenant.Store
//
// RunStore checks that Get of an unknown Tenant fails with an error wrapping
// tenant.ErrNotFound; that Apply creates a Tenant with a UID and returns it
// with everything applied, status included; that Apply replaces the spec,
// labels, annotations, finalizers and status of a stored Tenant and keeps
// its UID, keeps the stored status when the applied one is the zero value,
// and changes nothing when applied twice; that ApplyStatus writes the
// status alone, and creates no Tenant (an error wrapping
// tenant.ErrNotFound); that Apply keeps the labels,
// annotations and finalizers another component set (StoreHarness.Update)
// and removes a label it applied before and no longer applies; that Delete
// removes a Tenant even when it carries tenant.Finalizer, and succeeds when
// there is none; that Delete of a Tenant that also carries another
// controller's finalizer removes only tenant.Finalizer and leaves the
// Tenant, with the other finalizer and a deletionTimestamp; that Tenants of
// the same name in two namespaces are independent;
// that ten concurrent Applies of one Tenant all succeed, each returning its
// own status, and leave one of them stored; and that a call with a cancelled
// context fails with an error wrapping context.Canceled.
//
// # Real API servers
//
// Every test uses names and namespaces no other test uses, and creates the
// namespaces it needs through StoreHarness.Namespace, so the suites run
// against a real API server as well as against package fake. They delete
// nothing they do not need to, except Tenants left with a finalizer, which
// a test removes in its cleanup (with Delete, or with StoreHarness.Update
// for a finalizer not kubepact's) so that their namespace can go.
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestTenantStoreConformance(t *testing.T) {
//		cfg := testcluster.StartT(t).AdminConfig()
//		client := kubernetes.NewForConfigOrDie(cfg)
//		installCRDs(t, cfg) // config/crd
//		tenanttest.RunStore(t, tenanttest.StoreHarness{
//			New: func(t *testing.T) tenant.Store {
//				typed, err := kube.NewClient(cfg, nil)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return kube.NewTenantStore(typed)
//			},
//			Namespace: func(t *testing.T, name string) {
//				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
//				_, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
//				if err != nil && !apierrors.IsAlreadyExists(err) {
//					t.Fatal(err)
//				}
//			},
//			Parallel: true,
//		})
//		tenanttest.RunNamespaces(t, tenanttest.NamespacesHarness{
//			New: func(t *testing.T) (tenant.Namespaces, func(context.Context, string) (*corev1.Namespace, error)) {
//				return kube.NewNamespaces(client), func(ctx context.Context, name string) (*corev1.Namespace, error) {
//					ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
//					if apierrors.IsNotFound(err) {
//						return nil, nil
//					}
//					return ns, err
//				}
//			},
//			Parallel: true,
//		})
//	}
package tenanttest
