// Package redisstore keeps coach sessions in Redis: it is the go-redis v9 adapter behind
// coach.Store, plus the client plumbing the gateway needs around it: Connect for standalone,
// Sentinel and Cluster URLs, Embedded for an in-process server when no Redis is configured
// (StartSaved for one whose keys are kept in a file between runs, see persist.go), and
// CountingHook, which proves how many round trips an operation costs.
//
// # Key layout
//
// A session has up to four keys under a configurable prefix (default "coachgw"):
//
//	{prefix}:{<id>}:s     the session document (JSON); expires after Options.TTL without a write
//	{prefix}:{<id>}:lock  the token of the writer that claimed the session; expires after the claim's ttl
//	{prefix}:{<id>}:t     the learner's transcript: a list of JSON entries, oldest first
//	{prefix}:{<id>}:tm    the transcript's counters: a hash of seq (the last entry's) and bytes (the list's total)
//
// for example coachgw:{3fa9…}:s. The braces are a Redis Cluster hash tag: only the id between
// them is hashed, so all keys of a session always live in the same slot, and so on the same
// node. That is what allows Claim, Commit and Delete to touch them in one Lua script: a
// cluster refuses a script whose keys span slots (CROSSSLOT). For the same reason the prefix must
// not contain braces, or the tag would no longer be the id.
//
// The transcript keys are written by Commit only, get the document's TTL whenever it does (Claim
// and Commit), and are deleted with it. Each entry is stored as the JSON of a
// coach.TranscriptEntry whose first member is its seq, assigned by the commit script from the
// counter in the :tm hash, so entries are numbered from 1 without gaps and the list's index of
// an entry is its seq minus the first entry's. After appending, the script drops the oldest
// entries while the list holds more than Options.TranscriptMaxEntries or its entries take more
// than Options.TranscriptMaxBytes, always keeping the newest one.
//
// Every operation touches the keys of one session (or the one key of a rate limiter, Allow), and
// so exactly one slot, but for the learner's index (below), which is a slot of its own:
//
//	Create   SET NX            {prefix}:{<id>}:s
//	  with a learner, also     SADD, PEXPIRE {prefix}:{lrn:<tenant>:<hash>} (one MULTI/EXEC; two on a cluster)
//	Get      GET               {prefix}:{<id>}:s
//	Claim       script         {prefix}:{<id>}:s, :lock, :t and :tm
//	Commit      script         {prefix}:{<id>}:s, :lock, :t and :tm
//	Renew       script         {prefix}:{<id>}:lock
//	Release     script         {prefix}:{<id>}:lock
//	Delete      script         {prefix}:{<id>}:s, :lock, :t and :tm
//	Transcript  script         {prefix}:{<id>}:s and :t
//	Allow    script            {prefix}:{rl:<tenant>}
//	OpenCircuit   SET PX       {prefix}:{cb:<endpoint>}
//	OpenCircuits  PTTL each    {prefix}:{cb:<endpoint>} (one command per key)
//	SafetyAudit.Audit         pipeline  {prefix}:{audit:<tenant>} (XADD, XTRIM, PEXPIRE; see audit.go)
//	SafetyAudit.SafetyEvents  XRANGE    {prefix}:{audit:<tenant>}
//
// No operation reads or writes two sessions at once (no MGET, no SCAN, no transaction across
// sessions), and the scripts touch only the keys passed to them in KEYS, never a key they build
// themselves, which Redis requires of scripts in a cluster and which lets go-redis send each
// script to the master that owns its slot. Sessions spread over the masters by their random ids.
// The tests in package clustertest prove all of this on a real three-master cluster.
//
// A session created with a learner reference is also listed in its learner's index,
// {prefix}:{lrn:<tenant>:<hash>} (see learner.go), written by Create in the same MULTI/EXEC as the
// document; on a cluster, where the two are in different slots, in a MULTI/EXEC of its own just
// before the document's SET NX, so that no session is ever stored unlisted. Erasing a learner
// (EraseLearner) is the one operation that scans the keyspace (every master of a cluster).
//
// No key of a session gets a TTL reaching past Options.Retention from the session's creation (the
// document's createdMs), however often a write refreshes it: a session's keys expire after
// Options.TTL without a write, or at the end of its retention, whichever comes first.
//
// A tenant's rate limiter (Allow) is one more key, {prefix}:{rl:<tenant>}; an open circuit of a
// model endpoint (OpenCircuit) is {prefix}:{cb:<endpoint>}, expiring when the circuit's cooldown
// ends.
//
// # Round trips and atomicity
//
// Claim and Commit are one Lua script each, so they are atomic and cost exactly one round trip
// (a turn costs two, its transcript entries included). Release and Delete are scripts too, Create is one SET NX, Get one GET.
// Scripts run with EVALSHA; call Prepare once at startup to load them, otherwise the first call of
// each script on a server that has not seen it costs one extra round trip (NOSCRIPT, then EVAL).
//
// The scripts never decode JSON. The document is written with tenant, version and commit (the
// token of the claim that wrote it) as its first members, so "the document of this tenant at
// version N" is a comparison of the document's first bytes (GETRANGE) with a header computed
// here by the same encoder. That check costs the same however long the history grows.
//
// go-redis resends a command whose connection broke before the reply arrived, so a command can
// run twice. Every operation is therefore idempotent for its own arguments: a resent Claim finds
// its own token in the lock and succeeds, a resent Commit finds the document it wrote (version
// and token in the header) and succeeds, and a resent Create finds its own document.
//
// # Errors
//
// Sessions that do not exist, belong to another tenant or have expired are coach.ErrNotFound; a
// held lock is coach.ErrBusy; a lost lock or a stale version on Commit is coach.ErrConflict.
// When Redis cannot be reached or answers that it cannot serve (connection refused, timeouts,
// LOADING, READONLY, CLUSTERDOWN, MASTERDOWN, TRYAGAIN, OOM, authentication, …) the error is a
// *coach.Error of KindUnavailable and code coach.CodeStoreUnavailable, and
// errors.Is(err, coach.ErrUnavailable) holds as well; the Redis error stays in the chain. Other
// failures are KindInternal.
//
// # URLs
//
// Connect accepts:
//
//	redis://[[user]:password@]host[:port][/db][?options]     one server (redis.ParseURL)
//	rediss://[[user]:password@]host[:port][/db][?options]    the same over TLS
//	redis+sentinel://[[user]:password@]host1[:port],host2[:port]/mastername[/db][?options]
//	redis+cluster://[[user]:password@]host1[:port],host2[:port][?options]
//
// The scheme selects the client (go-redis's universal client interface, redis.UniversalClient):
// the sentinel form asks the Sentinels for the current master and follows failovers; the cluster
// form needs any of the nodes (listing several survives one being down), learns the slot map from
// them and follows MOVED and ASK redirects. Prepare loads the scripts into every master.
// Sentinel hosts default to port 26379, cluster hosts to 6379. In the sentinel form the user and
// password are those of the master (the data node); the sentinels are asked without
// authentication. The options are go-redis's URL options (dial_timeout, read_timeout, pool_size,
// …; see redis.ParseFailoverURL and redis.ParseClusterURL).
package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/redis/go-redis/v9"
)

// Options configures a Store. Zero fields take their defaults.
type Options struct {
	// Prefix starts every key; default "coachgw". It must not contain '{' or '}'.
	Prefix string
	// TTL is how long a session lives without a write; every write (Create, Claim, Commit)
	// restarts it. Default 24h.
	TTL time.Duration
	// TranscriptMaxEntries and TranscriptMaxBytes bound a session's transcript: the oldest
	// entries are dropped beyond them. Defaults 1000 entries and 1 MiB.
	TranscriptMaxEntries int
	TranscriptMaxBytes   int
	// Timeout bounds each operation, its wait for a pooled connection, the dial and every
	// reply included: past it the operation fails as unavailable (store_unavailable), so that a
	// Redis that stops answering never holds a request longer. Default DefaultOpTimeout.
	Timeout time.Duration
	// Retention is the longest a session and its transcript are kept, counted from the
	// session's creation however active it stays (COACH_TRANSCRIPT_RETENTION): no write gives
	// any of its keys a TTL reaching past it. Default DefaultRetention.
	Retention time.Duration
	// MaxLearnerSessions bounds the sessions kept of one learner reference of a tenant
	// (COACH_MAX_SESSIONS_PER_LEARNER; see learnerHasRoom); 0 leaves them
	// unbounded.
	MaxLearnerSessions int
	// Probe, when set, is the client of Ping: a second client of the same Redis with a pool
	// of its own (OpenPool, PoolOf), so that readiness says whether Redis answers, never
	// whether a connection of the store's pool is free (see OpenPool). Default: the store's
	// client.
	Probe redis.UniversalClient
}

// Defaults of Options.
const (
	DefaultOpTimeout            = time.Second
	DefaultPrefix               = "coachgw"
	DefaultTTL                  = 24 * time.Hour
	DefaultTranscriptMaxEntries = 1000
	DefaultTranscriptMaxBytes   = 1 << 20
	DefaultRetention            = 365 * 24 * time.Hour
)

// Store is a coach.Store in Redis. It is safe for concurrent use.
type Store struct {
	client     redis.UniversalClient
	prefix     string
	ttl        time.Duration
	maxEntries int
	maxBytes   int
	timeout    time.Duration
	retention  time.Duration
	// maxLearner is Options.MaxLearnerSessions.
	maxLearner int
	// probe is the client of Ping (Options.Probe).
	probe redis.UniversalClient
}

var _ coach.Store = (*Store)(nil)

// New returns a Store over client. It panics if opts.Prefix contains a brace, which would break
// the hash tags that keep a session's keys in one slot.
func New(client redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic(fmt.Sprintf("redisstore: key prefix %q must not contain '{' or '}'", opts.Prefix))
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.TranscriptMaxEntries <= 0 {
		opts.TranscriptMaxEntries = DefaultTranscriptMaxEntries
	}
	if opts.TranscriptMaxBytes <= 0 {
		opts.TranscriptMaxBytes = DefaultTranscriptMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpTimeout
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Probe == nil {
		opts.Probe = client
	}
	return &Store{
		probe:  opts.Probe,
		client: client, prefix: opts.Prefix, ttl: opts.TTL, maxEntries: opts.TranscriptMaxEntries,
		maxBytes: opts.TranscriptMaxBytes, timeout: opts.Timeout, retention: opts.Retention,
		maxLearner: max(0, opts.MaxLearnerSessions),
	}
}

// bound returns ctx with the deadline of one operation (Options.Timeout) unless it has an
// earlier one. The client honours it on the socket (see Open), and sends nothing twice.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Prepare loads the store's scripts into Redis (into every master of a cluster), so that even
// the first Claim and Commit take a single round trip. It is optional: without it a script is
// loaded by its first use.
func (s *Store) Prepare(ctx context.Context) error {
	for _, sc := range scripts {
		if err := sc.Load(ctx, s.client).Err(); err != nil {
			return failure("load scripts", err)
		}
	}
	return nil
}

// Results of claimScript other than the document itself.
const (
	claimNotFound = 0
	claimBusy     = 1
)

// claimScript locks a session and returns its document, all or nothing. A document of another
// tenant is reported as missing, before the lock is looked at, so that neither a lock is taken
// nor the session's existence revealed.
//
// The session's keys get the session ttl again, but never past the end of its retention: the
// document's createdMs (see record) plus the retention. A session past it is deleted and
// reported missing, whatever the clock of the instance that wrote its last TTL said.
//
// KEYS: document, lock, transcript, transcript counters. ARGV: tenant header, token, lock ttl
// (ms), session ttl (ms), retention (ms), now (ms since the epoch).
var claimScript = redis.NewScript(`
local doc = redis.call('GET', KEYS[1])
if not doc or string.sub(doc, 1, #ARGV[1]) ~= ARGV[1] then
  return 0
end
local ttl = tonumber(ARGV[4])
local born = string.match(doc, '^"version":%d+,"commit":"[^"]*","createdMs":(%d+),', #ARGV[1] + 1)
if born and tonumber(born) > 0 then
  local left = tonumber(born) + tonumber(ARGV[5]) - tonumber(ARGV[6])
  if left < 1 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
    return 0
  end
  ttl = math.min(ttl, left)
end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[2] then
  return 1
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('PEXPIRE', KEYS[4], ttl)
return doc
`)

// commitScript replaces the document if the lock still holds the token and the stored document
// is the version the new one follows, and then drops the lock. When the lock is gone but the
// stored document is the one this token wrote, an earlier attempt of this same commit succeeded.
//
// The same script appends the commit's transcript entries, numbering them, and trims the
// transcript to its bounds (see the key layout above). An entry arrives as its JSON without the
// opening brace; the script prefixes it with {"seq":N,.
//
// KEYS: document, lock, transcript, transcript counters. ARGV: token, header of the expected
// stored document (tenant, previous version), header of the new document (tenant, version,
// token), new document, session ttl (ms; already capped at the end of the session's retention,
// see Store.keyTTL), most entries, most bytes, then the entries.
var commitScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  if redis.call('GETRANGE', KEYS[1], 0, #ARGV[3] - 1) == ARGV[3] then
    return 1
  end
  return 0
end
if redis.call('GETRANGE', KEYS[1], 0, #ARGV[2] - 1) ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
redis.call('DEL', KEYS[2])
if #ARGV > 7 then
  local m = redis.call('HMGET', KEYS[4], 'seq', 'bytes')
  local seq = tonumber(m[1] or '0')
  local bytes = tonumber(m[2] or '0')
  for i = 8, #ARGV do
    seq = seq + 1
    local e = '{"seq":' .. string.format('%d', seq) .. ',' .. ARGV[i]
    redis.call('RPUSH', KEYS[3], e)
    bytes = bytes + #e
  end
  local n = redis.call('LLEN', KEYS[3])
  local maxn, maxb = tonumber(ARGV[6]), tonumber(ARGV[7])
  while n > 1 and (n > maxn or bytes > maxb) do
    bytes = bytes - #redis.call('LPOP', KEYS[3])
    n = n - 1
  end
  redis.call('HSET', KEYS[4], 'seq', string.format('%d', seq), 'bytes', string.format('%d', bytes))
end
redis.call('PEXPIRE', KEYS[3], ARGV[5])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
return 1
`)

// transcriptScript returns a page of a tenant's session transcript: the list index of the
// page's first entry, then the entries, oldest first; 0 when the session is not the tenant's.
//
// KEYS: document, transcript. ARGV: tenant header, before (0: the newest), limit.
var transcriptScript = redis.NewScript(`
if redis.call('GETRANGE', KEYS[1], 0, #ARGV[1] - 1) ~= ARGV[1] then
  return 0
end
local n = redis.call('LLEN', KEYS[2])
local stop = n
local before = tonumber(ARGV[2])
if n > 0 and before > 0 then
  local first = tonumber(string.match(redis.call('LINDEX', KEYS[2], 0), '^{"seq":(%d+),'))
  stop = math.min(n, math.max(0, before - first))
end
local start = math.max(0, stop - tonumber(ARGV[3]))
local page = {}
if stop > start then
  page = redis.call('LRANGE', KEYS[2], start, stop - 1)
end
table.insert(page, 1, start)
return page
`)

// releaseScript drops the lock only while it holds the token.
//
// KEYS: lock. ARGV: token.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// renewScript extends the lock only while it holds the token. A resent Renew just extends
// it again.
//
// KEYS: lock. ARGV: token, lock ttl (ms).
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// deleteScript removes a session of the tenant, lock included.
//
// KEYS: document, lock, transcript, transcript counters. ARGV: tenant header.
var deleteScript = redis.NewScript(`
if redis.call('GETRANGE', KEYS[1], 0, #ARGV[1] - 1) == ARGV[1] then
  return redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
end
return 0
`)

var scripts = []*redis.Script{claimScript, commitScript, transcriptScript, renewScript, releaseScript, deleteScript, eraseScript, allowScript, reserveScript, settleScript, endScript}

// Create stores a new session. An id that is already taken is an error.
//
// A session with a learner reference is added to its learner's index (see learner.go) in the
// same round trip, in one MULTI/EXEC with the document: both or neither are written. On a
// cluster the index and the document are in different slots, and it takes two round trips,
// index first (see createIndexed). Either way no session of a learner escapes its learner's
// export and erasure. A learner at Options.MaxLearnerSessions gets none (see learnerHasRoom).
func (s *Store) Create(ctx context.Context, sess *coach.Session) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	doc, err := encode(sess, "")
	if err != nil {
		return err
	}
	key := s.docKey(sess.ID)
	ttl := s.keyTTL(sess.CreatedAt, time.Now())
	var created bool
	if sess.Learner == "" {
		created, err = s.client.SetNX(ctx, key, doc, ttl).Result()
	} else {
		if err := s.learnerHasRoom(ctx, sess.Tenant, sess.Learner); err != nil {
			return err
		}
		created, err = s.createIndexed(ctx, sess, doc, ttl)
	}
	if err != nil {
		return failure("create", err)
	}
	if created {
		return nil
	}
	// The rare collision path may cost a second round trip: the document found can be this very
	// one, written by an attempt whose reply was lost and that go-redis then resent.
	cur, err := s.client.Get(ctx, key).Result()
	switch {
	case err == nil && cur == string(doc):
		return nil
	case err != nil && !errors.Is(err, redis.Nil):
		return failure("create", err)
	}
	return coach.Errorf(coach.KindInternal, coach.CodeInternal, "session id %s is already taken", sess.ID)
}

// Get returns the session id of tenant, or coach.ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, id string) (*coach.Session, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	doc, err := s.client.Get(ctx, s.docKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, coach.ErrNotFound
	}
	if err != nil {
		return nil, failure("get", err)
	}
	sess, err := decode(doc)
	if err != nil {
		return nil, err
	}
	if sess.Tenant != tenant {
		return nil, coach.ErrNotFound
	}
	return sess, nil
}

// Delete removes the session id of tenant and its lock. A missing session, or one of another
// tenant, is left alone without error. A turn in flight on a deleted session fails its Commit.
func (s *Store) Delete(ctx context.Context, tenant, id string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err := deleteScript.Run(ctx, s.client, s.keys(id), tenantHeader(tenant)).Err()
	if err != nil {
		return failure("delete", err)
	}
	return nil
}

// Claim locks the session id of tenant for at most ttl (rounded up to whole milliseconds) and
// returns it with the lock's token. It is one round trip. A claim counts as activity: it restarts
// the session's TTL, so a session cannot expire under a turn that just started.
func (s *Store) Claim(ctx context.Context, tenant, id string, ttl time.Duration) (*coach.Session, string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	token := rand.Text()
	res, err := claimScript.Run(ctx, s.client, s.keys(id), s.claimArgs(tenant, token, ttl)...).Result()
	sess, err := s.claimed(id, token, res, err)
	if err != nil {
		return nil, "", err
	}
	return sess, token, nil
}

// claimArgs returns the ARGV of claimScript.
func (s *Store) claimArgs(tenant, token string, ttl time.Duration) []any {
	return []any{tenantHeader(tenant), token, millis(ttl), millis(s.ttl), millis(s.retention), time.Now().UnixMilli()}
}

// claimed reads the reply of claimScript that tried to take the lock of session id with token.
func (s *Store) claimed(id, token string, res any, err error) (*coach.Session, error) {
	if err != nil {
		err = failure("claim", err)
		if errors.Is(err, coach.ErrUnavailable) {
			// The script may have reached Redis and run, or run later (a paused server runs
			// what it received when it resumes): the lock it took would block the session
			// for the lock's whole ttl. It is dropped in the background once Redis answers.
			go s.later("release", func(ctx context.Context) error {
				return releaseScript.Run(ctx, s.client, []string{s.lockKey(id)}, token).Err()
			})
		}
		return nil, err
	}
	switch v := res.(type) {
	case string:
		sess, err := decode(v)
		if err != nil {
			s.release(id, token)
			return nil, err
		}
		return sess, nil
	case int64:
		if v == claimBusy {
			return nil, coach.ErrBusy
		}
		if v == claimNotFound {
			return nil, coach.ErrNotFound
		}
	}
	s.release(id, token)
	return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "unexpected claim result %T %v", res, res)
}

// release drops a lock this store just took but cannot hand out, on a context of its own: the
// caller's may be the reason it cannot.
func (s *Store) release(id, token string) {
	_ = s.Release(context.Background(), id, token)
}

// Commit stores sess, whose Version must be one more than the stored one, appends extra's
// transcript entries (numbering them; their Seq is ignored) and releases the lock held with
// token, atomically and in one round trip. It returns coach.ErrConflict, having written
// nothing, when the lock is no longer token's (expired, taken over, or the session deleted) or
// the stored version is not sess.Version-1. Committing the same token and version again after a
// success reports success without writing again, transcript entries included.
func (s *Store) Commit(ctx context.Context, sess *coach.Session, token string, extra coach.CommitExtra) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	doc, err := encode(sess, token)
	if err != nil {
		return err
	}
	args := make([]any, 0, 7+len(extra.Transcript))
	args = append(args,
		token,
		versionHeader(sess.Tenant, sess.Version-1),
		commitHeader(sess.Tenant, sess.Version, token),
		doc,
		millis(s.keyTTL(sess.CreatedAt, time.Now())),
		s.maxEntries,
		s.maxBytes,
	)
	for _, e := range extra.Transcript {
		body, err := entryBody(e)
		if err != nil {
			return err
		}
		args = append(args, body)
	}
	var res any
	if u := extra.Usage; u != nil {
		// The turn's settlement rides in the same round trip as the commit, and runs whether
		// or not the commit finds its lock: the tokens were spent either way.
		var others []*redis.Cmd
		res, others, err = s.runWith(ctx, commitScript, s.keys(sess.ID), args, func(p redis.Pipeliner, sha bool) []*redis.Cmd {
			if sha {
				return []*redis.Cmd{s.queueSettle(ctx, p, u)}
			}
			return []*redis.Cmd{settleScript.Eval(ctx, p, s.settleKeys(u), s.settleArgs(u)...)}
		})
		if err == nil {
			err = others[0].Err()
		}
	} else {
		res, err = commitScript.Run(ctx, s.client, s.keys(sess.ID), args...).Result()
	}
	if err != nil {
		return failure("commit", err)
	}
	if n, _ := res.(int64); n != 1 {
		return coach.ErrConflict
	}
	return nil
}

// Transcript returns up to limit entries of the transcript of session id of tenant whose Seq is
// below before (0: the newest), oldest first, in one round trip; coach.ErrNotFound when the
// session does not exist or is another tenant's.
func (s *Store) Transcript(ctx context.Context, tenant, id string, before int64, limit int) (coach.TranscriptPage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := transcriptScript.Run(ctx, s.client, []string{s.docKey(id), s.transcriptKey(id)}, tenantHeader(tenant), before, limit).Result()
	if err != nil {
		return coach.TranscriptPage{}, failure("transcript", err)
	}
	items, ok := res.([]any)
	if !ok || len(items) == 0 {
		if n, isInt := res.(int64); isInt && n == 0 {
			return coach.TranscriptPage{}, coach.ErrNotFound
		}
		return coach.TranscriptPage{}, coach.Errorf(coach.KindInternal, coach.CodeInternal, "unexpected transcript result %T %v", res, res)
	}
	start, _ := items[0].(int64)
	page := coach.TranscriptPage{Entries: make([]coach.TranscriptEntry, 0, len(items)-1)}
	for _, it := range items[1:] {
		raw, _ := it.(string)
		var e coach.TranscriptEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return coach.TranscriptPage{}, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "cannot decode a stored transcript entry")
		}
		page.Entries = append(page.Entries, e)
	}
	if start > 0 && len(page.Entries) > 0 {
		page.Next = page.Entries[0].Seq
	}
	return page, nil
}

// entryPrefix is how the encoding of a TranscriptEntry with a zero Seq begins; the commit script
// puts the entry's real seq in its place.
const entryPrefix = `{"seq":0,`

// entryBody returns the JSON of e without its seq: what the commit script numbers.
func entryBody(e coach.TranscriptEntry) (string, error) {
	e.Seq = 0
	b, err := json.Marshal(e)
	if err != nil {
		return "", coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "cannot encode a transcript entry")
	}
	body, ok := strings.CutPrefix(string(b), entryPrefix)
	if !ok {
		// The script would store {"seq":N,{"seq":0,… otherwise: Seq must stay the first member.
		return "", coach.Errorf(coach.KindInternal, coach.CodeInternal, "a transcript entry encodes as %.20s…, not starting with %s", b, entryPrefix)
	}
	return body, nil
}

// Renew extends the lock on session id to ttl from now (rounded up to whole milliseconds) if it
// is still held with token, in one round trip; otherwise it returns coach.ErrConflict: the lock
// expired or was taken over, and the holder must not commit.
func (s *Store) Renew(ctx context.Context, id, token string, ttl time.Duration) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := renewScript.Run(ctx, s.client, []string{s.lockKey(id)}, token, millis(ttl)).Int64()
	if err != nil {
		return failure("renew", err)
	}
	if n != 1 {
		return coach.ErrConflict
	}
	return nil
}

// Release drops the lock on session id if it is still held with token; otherwise it does nothing.
func (s *Store) Release(ctx context.Context, id, token string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := releaseScript.Run(ctx, s.client, []string{s.lockKey(id)}, token).Err(); err != nil {
		return failure("release", err)
	}
	return nil
}

// Ping reports whether Redis answers, on the probe's client (Options.Probe).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.probe.Ping(ctx).Err(); err != nil {
		return failure("ping", err)
	}
	return nil
}

func (s *Store) docKey(id string) string  { return s.prefix + ":{" + id + "}:s" }
func (s *Store) lockKey(id string) string { return s.prefix + ":{" + id + "}:lock" }

func (s *Store) transcriptKey(id string) string { return s.prefix + ":{" + id + "}:t" }
func (s *Store) countersKey(id string) string   { return s.prefix + ":{" + id + "}:tm" }

// keys returns the keys of session id that Claim, Commit and Delete pass to their scripts.
func (s *Store) keys(id string) []string {
	return []string{s.docKey(id), s.lockKey(id), s.transcriptKey(id), s.countersKey(id)}
}

// keyTTL returns the TTL a write at now gives the keys of a session created at created: the
// session ttl, cut to what is left of the session's retention (at least a millisecond). A
// session without a creation time (none the engine makes) has no retention to count from.
func (s *Store) keyTTL(created, now time.Time) time.Duration {
	return min(s.ttl, s.retentionLeft(created, now))
}

// retentionLeft returns what is left at now of the retention of a session created at created,
// at least a millisecond; the whole retention for a session without a creation time.
func (s *Store) retentionLeft(created, now time.Time) time.Duration {
	if created.IsZero() {
		return s.retention
	}
	return max(time.Millisecond, created.Add(s.retention).Sub(now))
}

// millis returns d in whole milliseconds, at least 1: PX rejects 0.
func millis(d time.Duration) int64 {
	return max(1, int64((d+time.Millisecond-1)/time.Millisecond))
}

// record is the stored session document. Tenant, Version, Commit and CreatedMs must stay its
// first fields, in this order: the scripts recognise a document by those leading bytes (see
// commitHeader), and the claim script reads CreatedMs right after them.
type record struct {
	Tenant  string `json:"tenant"`
	Version int64  `json:"version"`
	// Commit is the token of the claim whose commit wrote this version, empty after Create.
	Commit string `json:"commit"`
	// CreatedMs is CreatedAt in milliseconds since the epoch, for the claim script, which
	// counts the session's retention from it without decoding the document; 0 (no retention)
	// for a session without a creation time.
	CreatedMs int64           `json:"createdMs"`
	ID        string          `json:"id"`
	Contract  string          `json:"contract"`
	Locale    string          `json:"locale"`
	State     json.RawMessage `json:"state"`
	History   []coach.Message `json:"history"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Learner   string          `json:"learner,omitempty"`
	// LearnerBy is Session.LearnerAssertedBy; it follows Learner, so that the learner's member
	// (see eraseScript) is still followed by a comma.
	LearnerBy string            `json:"learnerBy,omitempty"`
	Safety    *coach.SafetyHold `json:"safety,omitempty"`
}

func encode(s *coach.Session, token string) ([]byte, error) {
	b, err := json.Marshal(record{
		Tenant: s.Tenant, Version: s.Version, Commit: token, CreatedMs: createdMs(s.CreatedAt),
		ID: s.ID, Contract: s.Contract, Locale: s.Locale, State: s.State, History: s.History,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Learner: s.Learner, LearnerBy: s.LearnerAssertedBy, Safety: s.Safety,
	})
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "cannot encode session")
	}
	return b, nil
}

// createdMs returns t in milliseconds since the epoch, 0 for the zero time.
func createdMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func decode(doc string) (*coach.Session, error) {
	var r record
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "cannot decode stored session")
	}
	return &coach.Session{
		ID: r.ID, Contract: r.Contract, Locale: r.Locale, Version: r.Version, State: r.State,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Tenant: r.Tenant, History: r.History,
		Learner: r.Learner, LearnerAssertedBy: r.LearnerBy, Safety: r.Safety,
	}, nil
}

// tenantHeader returns how a document of tenant begins. It ends with the comma that follows the
// tenant, so one tenant's header is never a prefix of another's.
func tenantHeader(tenant string) string {
	return `{"tenant":` + jsonString(tenant) + `,`
}

// versionHeader returns how the document of tenant at version begins.
func versionHeader(tenant string, version int64) string {
	return tenantHeader(tenant) + `"version":` + strconv.FormatInt(version, 10) + `,`
}

// commitHeader returns how the document of tenant at version written by the claim token begins.
func commitHeader(tenant string, version int64, token string) string {
	return versionHeader(tenant, version) + `"commit":` + jsonString(token) + `,`
}

// jsonString encodes s exactly as json.Marshal does inside a record.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}
