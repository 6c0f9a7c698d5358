// Package peeringwriters holds the manifests of who may write the objects
// of peering from Git (AuthorizedConsumer, TrustedProvider): the ClusterRole
// kubepact-peering-admin, the ValidatingAdmissionPolicy
// kubepact-peering-writers with its parameter, the ConfigMap
// kubepact-peering-writers that lists the GitOps ServiceAccounts, and the
// policy that guards that list. Its tests apply config/ (and
// config/enrolment) to a real API server and try, from the attacker's side,
// each write these manifests and the controller's policy
// kubepact-enrolment-records refuse.
package peeringwriters
