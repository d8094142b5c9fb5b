package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/testsignal"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// What the brain keeps of bearer tokens, so that authenticating costs a database lookup only now and then:
//
//   - callers found (by a configured token's name, or a stored token's SHA-256) are trusted for callerTTL,
//     then read again, at any rate: a token once good is never throttled;
//   - tokens not found are remembered as unknown for unknownTokenTTL (a client retrying a stale token costs
//     one lookup per unknownTokenTTL);
//   - each client address has a budget of lookups that find nothing (authFailureBurst, refilled at
//     authFailureRate a second): past it, an unknown token is answered 429 without a lookup, until the
//     budget refills. Tokens are 256 random bits, so guessing is hopeless anyway; the budget keeps a flood of
//     random tokens from taking the database's connections from the callers whose tokens are good.
const (
	// callerTTL is how long the brain trusts what it read of a caller. A revoked token stops authenticating
	// within it; the executor refuses a revoked caller's calls at once, whatever the brain did.
	callerTTL = 2 * time.Second
	// unknownTokenTTL is how long a token not found is answered 401 without a lookup.
	unknownTokenTTL = 10 * time.Second
	// authFailureBurst and authFailureRate are each client address's budget of lookups that find nothing.
	authFailureBurst = 20
	authFailureRate  = 1.0 // a second
	// Sizes of the caches: keys come from whatever clients send, so each is bounded.
	knownCallersMax  = 10_000
	unknownTokensMax = 10_000
	clientAddrsMax   = 10_000
	clientAddrTTL    = 10 * time.Minute
)

// callerEntry is a caller read from core_callers, and when.
type callerEntry struct {
	caller *gemsql.Caller
	read   time.Time
}

// tokenGuard keeps what the brain learnt of tokens and of the addresses that sent bad ones.
type tokenGuard struct {
	known    *lru.Cache[string, callerEntry]
	unknown  *expiringCache[[sha256.Size]byte, struct{}]
	failures *expiringCache[netip.Prefix, *rate.Limiter]
	// budgetMade reports the client network each budget of lookups that find nothing is made for.
	budgetMade testsignal.Signal[netip.Prefix]
}

func newTokenGuard() *tokenGuard {
	known, _ := lru.New[string, callerEntry](knownCallersMax) // fails only for a size below 1
	return &tokenGuard{known: known,
		unknown:  newExpiringCache[[sha256.Size]byte, struct{}](unknownTokensMax, unknownTokenTTL),
		failures: newExpiringCache[netip.Prefix, *rate.Limiter](clientAddrsMax, clientAddrTTL)}
}

// expiringCache is a bounded LRU cache whose entries are gone ttl after they were added. They expire when
// read: golang-lru's expirable cache sweeps them with a goroutine nothing can stop (v2), which every brain
// made in a process would leave behind.
type expiringCache[K comparable, V any] struct {
	ttl   time.Duration
	cache *lru.Cache[K, addedEntry[V]]
	// adding is held by GetOrAdd, so that callers asking for one key at once get one value.
	adding sync.Mutex
}

type addedEntry[V any] struct {
	value V
	added time.Time
}

func newExpiringCache[K comparable, V any](size int, ttl time.Duration) *expiringCache[K, V] {
	cache, _ := lru.New[K, addedEntry[V]](size) // fails only for a size below 1
	return &expiringCache[K, V]{ttl: ttl, cache: cache}
}

// Get returns the value of key if it was added less than ttl ago. An expired entry stays until Add replaces
// it or the cache evicts it, as the cache's size bounds it.
func (c *expiringCache[K, V]) Get(key K) (V, bool) {
	e, ok := c.cache.Get(key)
	if !ok || time.Since(e.added) >= c.ttl {
		var none V
		return none, false
	}
	return e.value, true
}

// Contains says whether key was added less than ttl ago.
func (c *expiringCache[K, V]) Contains(key K) bool {
	_, ok := c.Get(key)
	return ok
}

func (c *expiringCache[K, V]) Add(key K, value V) {
	c.cache.Add(key, addedEntry[V]{value: value, added: time.Now()})
}

// GetOrAdd returns the value of key if it was added less than ttl ago, else adds made() and returns it: of
// callers asking for one key at once, one adds and all get its value (a Get then an Add would let each add
// its own, and all but the last be lost).
func (c *expiringCache[K, V]) GetOrAdd(key K, made func() V) V {
	c.adding.Lock()
	defer c.adding.Unlock()
	if v, ok := c.Get(key); ok {
		return v
	}
	v := made()
	c.Add(key, v)
	return v
}

// clientPrefix is the network a request comes from: its address, an IPv6 one's /64 (one host's share). It is
// the connection's peer: a client cannot choose it with a header (behind a proxy, every client shares the
// proxy's budget).
func clientPrefix(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	addr = addr.Unmap()
	bits := addr.BitLen()
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// byName returns the caller named (a configured token's), read at most every callerTTL.
func (g *tokenGuard) byName(ctx context.Context, db gemsql.DBTX, name string) (*gemsql.Caller, error) {
	key := "name:" + name
	if e, ok := g.known.Get(key); ok && time.Since(e.read) < callerTTL {
		return e.caller, nil
	}
	c, err := gemsql.CallerGet(ctx, db, name)
	if err != nil {
		return nil, err
	}
	g.known.Add(key, callerEntry{caller: c, read: time.Now()})
	return c, nil
}

// byToken returns the caller a stored token authenticates (gemsql.ErrNotFound for none), or a 429 error for
// a client address whose budget of lookups that found nothing is spent.
func (g *tokenGuard) byToken(ctx context.Context, db gemsql.DBTX, token, remoteAddr string) (*gemsql.Caller, error) {
	sum := sha256.Sum256([]byte(token))
	key := "token:" + string(sum[:])
	e, seen := g.known.Get(key)
	switch {
	case seen && time.Since(e.read) < callerTTL:
		return e.caller, nil
	case !seen && g.unknown.Contains(sum):
		return nil, gemsql.ErrNotFound
	}
	var spent *rate.Reservation
	if !seen {
		prefix := clientPrefix(remoteAddr)
		lim := g.failures.GetOrAdd(prefix, func() *rate.Limiter {
			g.budgetMade.Signal(prefix)
			return rate.NewLimiter(authFailureRate, authFailureBurst)
		})
		if spent = lim.Reserve(); spent.Delay() > 0 {
			wait := spent.Delay()
			spent.Cancel()
			return nil, tooManyFailures(wait)
		}
	}
	c, err := gemsql.CallerByToken(ctx, db, token)
	switch {
	case errors.Is(err, gemsql.ErrNotFound):
		g.known.Remove(key) // a token once good and now gone (rotated): unknown from now on
		g.unknown.Add(sum, struct{}{})
		return nil, err
	case err != nil:
		if spent != nil {
			spent.Cancel() // the database failed, not the client
		}
		return nil, err
	}
	if spent != nil {
		spent.Cancel() // a good token costs the address nothing
	}
	g.known.Add(key, callerEntry{caller: c, read: time.Now()})
	return c, nil
}

// tooManyFailures is the 429 of an address that sent too many unknown tokens; retry after wait.
func tooManyFailures(wait time.Duration) *brain.Error {
	seconds := int(math.Ceil(wait.Seconds()))
	return &brain.Error{Code: brain.ETOOMANY, Message: fmt.Sprintf(
		"too many unknown bearer tokens from this address: retry after %ds", seconds), Details: map[string]any{"retry_after_s": seconds}}
}

// tarpitMax bounds how long an address over its budget waits for its 429: an answer at once would invite the
// next bad token at once, and the flood would cost the brain's CPU instead of the database.
const tarpitMax = time.Second

// tarpit holds a 429 answer for its retry time, at most tarpitMax, or until the client goes away.
func tarpit(ctx context.Context, err error) {
	var e *brain.Error
	if !errors.As(err, &e) || e.Code != brain.ETOOMANY {
		return
	}
	wait := tarpitMax
	if d, ok := e.Details.(map[string]any); ok {
		if s, ok := d["retry_after_s"].(int); ok {
			wait = min(wait, time.Duration(s)*time.Second)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// throttledFor is the Retry-After (whole seconds) of a 429 error, or "".
func throttledFor(err error) string {
	var e *brain.Error
	if !errors.As(err, &e) || e.Code != brain.ETOOMANY {
		return ""
	}
	if d, ok := e.Details.(map[string]any); ok {
		return fmt.Sprint(d["retry_after_s"])
	}
	return ""
}

// principalErr turns a failed lookup into the request's error.
func principalErr(err error, name string) error {
	switch {
	case errors.Is(err, gemsql.ErrNotFound) && name == "":
		return brain.Errorf(brain.EUNAUTHORIZED, "invalid bearer token")
	case errors.Is(err, gemsql.ErrNotFound):
		return brain.Errorf(brain.EUNAUTHORIZED, "the caller of this token, %q, is not recorded (restart the brain to record its configured tokens)", name)
	}
	return err // a 429 (tooManyFailures), the database's failure: as it is
}
