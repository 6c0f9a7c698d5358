// Package enrolhttp carries grants (package enrol) over HTTPS: the
// provider's enrolment endpoint (Handler), which serves the grants its
// controller signed, and the consumer's client (Client), which fetches its
// own.
//
// The endpoint only reads. It serves from a cache of the provider's
// AuthorizedConsumers, so a request causes no write and no request to the
// API server, whoever sends it. A consumer ID that is not committed, a
// grant not yet signed and a request for another CSR get the same answer,
// 404 "not authorized", after the same work.
//
// The client contacts a URL that a TrustedProvider names, which makes it a
// request-forgery risk: it follows no redirect, uses no proxy, and dials
// no link-local, unspecified or multicast address (cloud metadata
// services among them), whatever a name resolves to (CheckURL,
// CheckAddr). It authenticates the endpoint by the enrolment keys the
// consumer committed: the endpoint's certificate must be issued by one
// (enrol.VerifyServingCertificate). What it fetches it trusts only once
// enrol.VerifyGrant has checked it.
//
// # Errors
//
// Client.Fetch returns ErrNotAuthorized for an endpoint that has no grant
// for the request (404 or 403), an error wrapping ErrForbiddenURL for an
// endpoint it must not contact (CheckURL at once, CheckAddr at each dial),
// enrol.ErrEndpointCertificate for an endpoint that is not the provider's,
// and enrol.ErrMalformed for an answer that is not a grant. A redirect,
// a 429 or any other status is an error that matches none of them.
//
// # Concurrency
//
// A Handler serves concurrent requests; a Client may be used by several
// goroutines once its fields are set.
package enrolhttp
