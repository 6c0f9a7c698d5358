package enrolhttp

import (
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// Grants looks up the grant signed for a consumer ID, nil when there is
// none: typically from a cache of the AuthorizedConsumers, never a request
// to the API server.
type Grants func(consumerID string) *peeringv1alpha1.Grant

// Limits are the endpoint's failure limits. They apply per replica and
// per client address as the replica sees it (an IPv6 client by its /64):
// behind a proxy or a load
// balancer that does not keep the client's address, every client shares
// the proxy's budget.
type Limits struct {
	// PerClient is how many requests a client address may make per
	// second, Burst how many at once. Zero means 1 and 5.
	PerClient rate.Limit
	Burst     int
	// Clients bounds how many client addresses are tracked; past it the
	// oldest are forgotten. Zero means 10000.
	Clients int
}

// Handler serves grants: GET GrantsPath+consumerID?csr=<sha256>. Any
// other path or method gets the 404 "not authorized" an unknown consumer
// gets; a client over its limit gets 429.
type Handler struct {
	grants  Grants
	limits  Limits
	refused func(client, consumerID, why string)
	mu      sync.Mutex
	clients map[string]*clientLimit
}

// Why a request was not authorized, as the handler records it (WithLog);
// the caller is told none of it.
const (
	WhyNoGrant    = "no grant served for this consumer ID: none is committed, or it is not Ready"
	WhyOtherCSR   = "the grant is for another CSR than the request names"
	WhyNotAGrant  = "not a GET of a grant"
	WhyRateLimits = "over the client's rate limit"
)

// WithLog makes h record, through refused, why it answered a request with
// anything but a grant: the client's address, the consumer ID asked for
// (empty when the path names none) and one of the Why reasons. It returns
// h.
func (h *Handler) WithLog(refused func(client, consumerID, why string)) *Handler {
	h.refused = refused
	return h
}

func (h *Handler) record(r *http.Request, consumerID, why string) {
	if h.refused != nil {
		h.refused(r.RemoteAddr, consumerID, why)
	}
}

type clientLimit struct {
	limiter *rate.Limiter
	seen    time.Time
}

// NewHandler returns the handler serving from grants, within limits.
func NewHandler(grants Grants, limits Limits) *Handler {
	if limits.PerClient == 0 {
		limits.PerClient = 1
	}
	if limits.Burst == 0 {
		limits.Burst = 5
	}
	if limits.Clients == 0 {
		limits.Clients = 10000
	}
	return &Handler{grants: grants, limits: limits, clients: make(map[string]*clientLimit)}
}

// unknown stands in for a consumer with no grant, so that an unknown ID
// costs the comparison a known one costs.
var unknown = &peeringv1alpha1.Grant{CSRSHA256: strings.Repeat("0", 64)}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !h.allow(r.RemoteAddr) {
		h.record(r, "", WhyRateLimits)
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, GrantsPath)
	if r.Method != http.MethodGet || !ok || id == "" || strings.Contains(id, "/") {
		h.record(r, "", WhyNotAGrant)
		notAuthorized(w)
		return
	}
	g := h.grants(id)
	found := g != nil
	if !found {
		g = unknown
	}
	match := subtle.ConstantTimeCompare([]byte(g.CSRSHA256), []byte(r.URL.Query().Get(CSRParam))) == 1
	if !found || !match {
		why := WhyNoGrant
		if found {
			why = WhyOtherCSR
		}
		h.record(r, id, why)
		notAuthorized(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(g)
}

// notAuthorized is every 404 of the handler, whatever was not found: a
// path, a consumer, a grant or a CSR.
func notAuthorized(w http.ResponseWriter) {
	http.Error(w, ErrNotAuthorized.Error(), http.StatusNotFound)
}

// clientKey is the address a client is limited by: its IPv4 address, or
// the /64 of its IPv6 address, which a single host commonly holds whole.
func clientKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is6() {
		return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
	}
	return ip.String()
}

// allow reports whether the client at remote may make one more request.
func (h *Handler) allow(remote string) bool {
	host := clientKey(remote)
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.clients[host]
	if !ok {
		if len(h.clients) >= h.limits.Clients {
			h.forgetOldest()
		}
		c = &clientLimit{limiter: rate.NewLimiter(h.limits.PerClient, h.limits.Burst)}
		h.clients[host] = c
	}
	c.seen = now
	return c.limiter.AllowN(now, 1)
}

// forgetOldest forgets the client seen longest ago.
func (h *Handler) forgetOldest() {
	var oldest string
	var at time.Time
	for host, c := range h.clients {
		if oldest == "" || c.seen.Before(at) {
			oldest, at = host, c.seen
		}
	}
	delete(h.clients, oldest)
}
