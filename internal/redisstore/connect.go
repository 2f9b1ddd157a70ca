package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Connect returns a client for rawURL (see the package documentation for the accepted forms)
// once it has answered a PING within ctx: a *redis.Client for redis:// and rediss://, a failover
// *redis.Client for redis+sentinel:// and a *redis.ClusterClient for redis+cluster://. A URL that
// does not parse is an error that does not repeat the URL, which may hold a password; an
// unreachable server is a coach.ErrUnavailable error.
func Connect(ctx context.Context, rawURL string) (redis.UniversalClient, error) {
	client, err := Open(rawURL)
	if err != nil {
		return nil, err
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, failure("connect", err)
	}
	return client, nil
}

// Open returns a client for rawURL (in any form Connect accepts) without talking to the
// server: go-redis connects lazily and reconnects by itself, so a gateway started while Redis is
// down can report itself unready and recover when Redis returns.
func Open(rawURL string) (redis.UniversalClient, error) {
	t, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return t.bounded().client(), nil
}

// OpenPool returns a second client of rawURL, as Open does, with a pool of its own of size
// connections (per node, for a cluster), for work that must neither take the connections the
// sessions need nor wait behind them:
//   - the turn log's blocking reads (TurnLog.WithReaders): a blocking XREAD holds its
//     connection for as long as it waits, so on the store's client enough of them would take
//     every connection the sessions need; on a pool of their own, more reads than connections
//     wait for one (up to the pool's timeout, longer than a read's block), and only the
//     readers do;
//   - the readiness probe (Options.Probe): a burst of turns that takes every connection of
//     the store's pool waits for a connection, and a probe queued behind it would report
//     Redis as not answering when it answers fine, and take the instance out of its load
//     balancer for every tenant.
func OpenPool(rawURL string, size int) (redis.UniversalClient, error) {
	t, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case t.failover != nil:
		t.failover.PoolSize = size
	case t.cluster != nil:
		t.cluster.PoolSize = size
	default:
		t.single.PoolSize = size
	}
	return t.bounded().client(), nil
}

// PoolOf is OpenPool for a client of the embedded Redis (Embedded, StartSaved): a second
// client of the same server with the same options and a pool of size connections.
func PoolOf(client redis.UniversalClient, size int) (redis.UniversalClient, error) {
	c, ok := client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("redisstore: a second pool of a %T: want the embedded Redis's client", client)
	}
	o := *c.Options()
	o.PoolSize = size
	return redis.NewClient(&o), nil
}

// DefaultTimeout bounds every exchange with Redis that the client makes on its own (dialling,
// reading a reply, writing a command) unless the URL sets its own. Store also gives each operation a deadline of Options.Timeout (which is usually the
// shorter), so that a Redis that stops answering (paused, partitioned) gets a
// store_unavailable within that bound instead of a request hanging for the TCP timeout.
const DefaultTimeout = 2 * time.Second

// poolWait bounds the wait for a pooled connection when the URL sets none. The store's
// operations carry their own deadline (COACH_REDIS_TIMEOUT), which go-redis honours while
// waiting for a connection too, so this is only the bound of a caller without one: a burst of
// turns that outnumbers the pool on a busy machine waits for a connection as long as its own
// deadline allows, rather than failing at a fixed DefaultTimeout below it.
const poolWait = 10 * time.Second

// bounded returns t with the bounds every client of the gateway needs where the URL did not set
// them: the timeouts of DefaultTimeout, context deadlines honoured on the socket (go-redis
// ignores them otherwise), and no resending. go-redis resends a command whose reply did not
// come (a read timeout included): a resend after a timeout doubles the wait a request has
// before its 503, and a command that did run the first time (a script that charges a budget,
// say) would run twice. The store's operations are idempotent anyway; the bound is what this
// buys.
func (t target) bounded() target {
	timeouts := func(dial, read, write, pool *time.Duration) {
		for _, d := range []*time.Duration{dial, read, write} {
			if *d == 0 {
				*d = DefaultTimeout
			}
		}
		if *pool == 0 {
			*pool = poolWait
		}
	}
	switch {
	case t.failover != nil:
		o := t.failover
		timeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout)
		o.ContextTimeoutEnabled = true
		if o.MaxRetries == 0 {
			o.MaxRetries = -1
		}
	case t.cluster != nil:
		o := t.cluster
		timeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout)
		o.ContextTimeoutEnabled = true
		if o.MaxRetries == 0 {
			o.MaxRetries = -1
		}
	default:
		o := t.single
		timeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout)
		o.ContextTimeoutEnabled = true
		if o.MaxRetries == 0 {
			o.MaxRetries = -1
		}
	}
	return t
}

// Embedded starts an in-process Redis (miniredis) on a loopback port and returns a client for it
// and a function that stops both. Its data lives only as long as the process. Keys expire with
// the wall clock, as in Redis, so abandoned locks and idle sessions go away.
func Embedded() (client redis.UniversalClient, stop func(), err error) {
	m, c, err := startEmbedded()
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return c, func() {
		once.Do(func() {
			_ = c.Close()
			m.Close()
		})
	}, nil
}

// embeddedTick is how often the embedded server's TTLs follow the clock: keys expire at most
// this late.
const embeddedTick = 250 * time.Millisecond

// embeddedServer is the miniredis of Embedded with the goroutine that moves its TTLs on.
type embeddedServer struct {
	*miniredis.Miniredis
	done chan struct{}
	once sync.Once
}

// Close stops the clock and the server.
func (m *embeddedServer) Close() {
	m.once.Do(func() {
		close(m.done)
		m.Miniredis.Close()
	})
}

// startEmbedded is Embedded with the server exposed, so that tests can move its clock.
//
// By default miniredis only expires keys when told to (FastForward); a long-running gateway
// needs TTLs that follow real time. miniredis's own ClockTTL does that on every command by
// walking every key, so that a command's cost grows with the number of keys (a turn's two round
// trips among 3000 keys took 8.8 ms, BenchmarkEmbeddedTurnWithManySessions); a goroutine moves
// the clock every embeddedTick instead, which costs that walk four times a second whatever the
// traffic (the same turn: 0.6 ms).
func startEmbedded() (*embeddedServer, *redis.Client, error) {
	m := &embeddedServer{Miniredis: miniredis.NewMiniRedis(), done: make(chan struct{})}
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("redisstore: start embedded redis: %w", err)
	}
	go func() {
		tick := time.NewTicker(embeddedTick)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-m.done:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	t := target{single: &redis.Options{Addr: m.Addr()}}
	return m, t.bounded().client().(*redis.Client), nil
}

// target holds the options of exactly one kind of client.
type target struct {
	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

func (t target) client() redis.UniversalClient {
	switch {
	case t.failover != nil:
		return redis.NewFailoverClient(t.failover)
	case t.cluster != nil:
		return redis.NewClusterClient(t.cluster)
	default:
		return redis.NewClient(t.single)
	}
}

// Default ports of the multi-host forms.
const (
	sentinelPort = "26379"
	clusterPort  = "6379"
)

// parseURL reads the client options from rawURL without connecting. The multi-host forms are
// rewritten into go-redis's own failover and cluster URLs, so they accept the same options.
func parseURL(rawURL string) (target, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return target{}, errors.New("redisstore: the Redis URL has no scheme (want redis://, rediss://, redis+sentinel:// or redis+cluster://)")
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return target{}, urlError(err)
		}
		return target{single: o}, nil
	case "redis+sentinel":
		m, err := splitMulti(rest, sentinelPort)
		if err != nil {
			return target{}, err
		}
		if len(m.path) < 1 || len(m.path) > 2 {
			return target{}, errors.New("redisstore: a sentinel URL needs a path /mastername or /mastername/db")
		}
		q := m.query
		q.Set("master_name", m.path[0])
		if len(m.path) == 2 {
			if _, err := strconv.Atoi(m.path[1]); err != nil {
				return target{}, fmt.Errorf("redisstore: invalid database number %q in sentinel URL", m.path[1])
			}
			q.Set("db", m.path[1])
		}
		if m.user != nil {
			q.Set("username", m.user.Username())
			if p, ok := m.user.Password(); ok {
				q.Set("password", p)
			}
		}
		q["addr"] = append(m.hosts[1:], q["addr"]...)
		u := url.URL{Scheme: "redis", Host: m.hosts[0], RawQuery: q.Encode()}
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return target{}, urlError(err)
		}
		return target{failover: o}, nil
	case "redis+cluster":
		m, err := splitMulti(rest, clusterPort)
		if err != nil {
			return target{}, err
		}
		if len(m.path) > 0 {
			return target{}, errors.New("redisstore: a cluster URL takes no path: a cluster has only database 0")
		}
		q := m.query
		q["addr"] = append(m.hosts[1:], q["addr"]...)
		u := url.URL{Scheme: "redis", User: m.user, Host: m.hosts[0], RawQuery: q.Encode()}
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return target{}, urlError(err)
		}
		return target{cluster: o}, nil
	default:
		return target{}, fmt.Errorf("redisstore: unsupported Redis URL scheme %q (want redis, rediss, redis+sentinel or redis+cluster)", scheme)
	}
}

// multiURL is a URL with a comma-separated host list, which net/url cannot parse.
type multiURL struct {
	user  *url.Userinfo
	hosts []string
	path  []string
	query url.Values
}

// splitMulti parses what follows the scheme of [user[:password]@]host[:port],...[/path][?query],
// giving every host without a port defaultPort.
func splitMulti(rest, defaultPort string) (multiURL, error) {
	var m multiURL
	rest, rawQuery, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		name, pass, hasPass := strings.Cut(authority[:i], ":")
		name, err1 := url.PathUnescape(name)
		pass, err2 := url.PathUnescape(pass)
		if err := errors.Join(err1, err2); err != nil {
			return m, errors.New("redisstore: invalid escape in the Redis URL's user information")
		}
		if hasPass {
			m.user = url.UserPassword(name, pass)
		} else {
			m.user = url.User(name)
		}
		authority = authority[i+1:]
	}
	for h := range strings.SplitSeq(authority, ",") {
		addr, err := withPort(strings.TrimSpace(h), defaultPort)
		if err != nil {
			return m, err
		}
		m.hosts = append(m.hosts, addr)
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg != "" {
			m.path = append(m.path, seg)
		}
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return m, errors.New("redisstore: invalid query in the Redis URL")
	}
	m.query = q
	return m, nil
}

func withPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", errors.New("redisstore: empty host in the Redis URL's host list")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: h is a name, an IPv4 address or a bracketed IPv6 address.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
	}
	if host == "" || port == "" || strings.ContainsAny(host, "[]") {
		return "", fmt.Errorf("redisstore: invalid host %q in the Redis URL", h)
	}
	return net.JoinHostPort(host, port), nil
}

// urlError drops the URL that net/url puts into its errors, since it may contain a password.
func urlError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("redisstore: invalid Redis URL: %w", err)
}
