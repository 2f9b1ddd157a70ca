package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// A learner's sessions are indexed (wire contract v1.3, data rights), so that an operator can
// export or erase everything of one learner without reading every session:
//
//	{prefix}:{lrn:<tenant>:<sha256 of the learner reference, hex>}   a set of session ids
//
// The reference is opaque client data (it may be an e-mail address or a school's pupil
// number), so the key carries its hash, never the reference itself. Create adds a session to
// its learner's set in the same MULTI/EXEC as the document (on a cluster, where the two are in
// different slots, in a transaction of its own just before it; see createIndexed), and gives
// the set the TTL of what is left of the new session's retention: the set lives as long as the
// newest session it lists may, and no longer. Erasure removes the ids it handled from the set,
// which Redis deletes when it is empty; a session created by a concurrent request is left
// listed, for the next erasure to find.

var _ coach.LearnerStore = (*Store)(nil)

// learnerKey returns the key of the index of learner's sessions of tenant.
func (s *Store) learnerKey(tenant, learner string) string {
	h := sha256.Sum256([]byte(learner))
	return s.prefix + ":{lrn:" + tenant + ":" + hex.EncodeToString(h[:]) + "}"
}

var _ coach.LearnerTombstones = (*Store)(nil)

// tombstoneKey returns the key of the tombstone of learner of tenant (MarkErased): the index's
// hash tag with ":erased", the time of the erasure in Unix milliseconds.
func (s *Store) tombstoneKey(tenant, learner string) string {
	return s.learnerKey(tenant, learner) + ":erased"
}

// MarkErased records that learner of tenant was erased at at, for ttl (coach.LearnerTombstones).
func (s *Store) MarkErased(ctx context.Context, tenant, learner string, at time.Time, ttl time.Duration) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.client.Set(ctx, s.tombstoneKey(tenant, learner), at.UnixMilli(), ttl).Err(); err != nil {
		return failure("erase learner", err)
	}
	return nil
}

// ErasedAt returns when learner of tenant was last erased, while its tombstone is kept
// (coach.LearnerTombstones).
func (s *Store) ErasedAt(ctx context.Context, tenant, learner string) (time.Time, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ms, err := s.client.Get(ctx, s.tombstoneKey(tenant, learner)).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, failure("erase learner", err)
	}
	return time.UnixMilli(ms).UTC(), true, nil
}

// createIndexed writes sess's document doc (SET NX with ttl) and adds sess to its learner's
// index, index first. It reports whether the document was written.
//
// On a single Redis (or a Sentinel-watched master) both go in one MULTI/EXEC, one round trip:
// both or neither are written. On a cluster the index ({lrn:…}) and the document ({<id>}) are
// in different slots, which no transaction may span (go-redis refuses it with CROSSSLOT before
// sending anything), so there they are two steps, in this order: the index's own MULTI/EXEC,
// then the document. A session is thus never stored without its index entry, whatever fails in
// between, and so never escapes its learner's export or erasure. What a failure between the
// steps can leave is the reverse, an entry whose document was not written: Create reports the
// error, and the entry is harmless, since export skips the sessions it does not find and
// erasure deletes only the keys of a session that is gone or of this tenant and learner (see
// eraseScript). It is removed by the next erasure or expires with the index. It is not removed
// here: after an error the document may have been written anyway (a reply lost on the way
// back), and removing its entry would unlist it.
func (s *Store) createIndexed(ctx context.Context, sess *coach.Session, doc []byte, ttl time.Duration) (bool, error) {
	idx := s.learnerKey(sess.Tenant, sess.Learner)
	keep := s.retentionLeft(sess.CreatedAt, time.Now())
	index := func(p redis.Pipeliner) {
		p.SAdd(ctx, idx, sess.ID)
		p.PExpire(ctx, idx, keep)
	}
	if _, cluster := s.client.(*redis.ClusterClient); cluster {
		if _, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			index(p)
			return nil
		}); err != nil {
			return false, err
		}
		return s.client.SetNX(ctx, s.docKey(sess.ID), doc, ttl).Result()
	}
	var set *redis.BoolCmd
	if _, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		index(p)
		set = p.SetNX(ctx, s.docKey(sess.ID), doc, ttl)
		return nil
	}); err != nil {
		return false, err
	}
	return set.Val(), nil
}

// LearnerSessions returns the ids of the sessions of learner of tenant that the index lists,
// sorted. Some may have expired since; a caller reads each and skips those it does not find.
func (s *Store) LearnerSessions(ctx context.Context, tenant, learner string) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ids, err := s.client.SMembers(ctx, s.learnerKey(tenant, learner)).Result()
	if err != nil {
		return nil, failure("learner sessions", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// eraseScript deletes the keys of one session of a learner: unless its document exists and is
// of another tenant or another learner (an index entry that is not this learner's), every key
// passed, so that what outlived an expired document goes too.
//
// KEYS: document, lock, transcript, transcript counters, current-turn pointer. ARGV: tenant
// header, the learner member as the document encodes it (,"learner":"<ref>").
var eraseScript = redis.NewScript(`
local doc = redis.call('GET', KEYS[1])
if doc then
  if string.sub(doc, 1, #ARGV[1]) ~= ARGV[1] then
    return -1
  end
  local _, j = string.find(doc, ARGV[2], 1, true)
  local after = j and string.sub(doc, j + 1, j + 1)
  if after ~= ',' and after ~= '}' then
    return -1
  end
end
return redis.call('DEL', unpack(KEYS))
`)

// EraseLearner deletes everything the store keeps of learner of tenant: every session its index
// lists (document, lock, transcript, turn pointer and line logs, and any other key of the
// session's hash tag), its safety audit records, the index and the learner's hold. Erasing a
// learner with nothing left is not an error. Another tenant's learner with the same reference
// is untouched: its index is another key, and each session is checked to be of this tenant
// and learner before it is deleted.
//
// It takes several round trips: one script per session, then one scan of the keyspace for the
// sessions' other keys (each turn's line log is a key of its own, named after the turn, which
// nothing lists), one per master on a cluster. An erasure is an operator's rare act; turns
// never pay for it.
//
// A turn running on one of the sessions while it is erased fails to commit (its document is
// gone) and may append its last lines to its line log after the scan: that log expires
// COACH_RESUME_TTL after the turn.
func (s *Store) EraseLearner(ctx context.Context, tenant, learner string) error {
	ids, err := s.LearnerSessions(ctx, tenant, learner)
	if err != nil {
		return err
	}
	member := `,"learner":` + jsonString(learner)
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !coach.ValidID(id) {
			continue
		}
		n, err := s.eraseSession(ctx, tenant, id, member)
		if err != nil {
			return err
		}
		if n >= 0 {
			gone[id] = true
		}
	}
	if len(gone) > 0 {
		if err := s.sweep(ctx, gone); err != nil {
			return err
		}
		if err := s.forgetLargest(ctx, tenant, gone); err != nil {
			return err
		}
	}
	if len(ids) > 0 {
		bctx, cancel := s.bound(ctx)
		defer cancel()
		members := make([]any, len(ids))
		for i, id := range ids {
			members[i] = id
		}
		if err := s.client.SRem(bctx, s.learnerKey(tenant, learner), members...).Err(); err != nil {
			return failure("erase learner", err)
		}
	}
	return s.eraseLearnerHold(ctx, tenant, learner)
}

// forgetLargest deletes the largest attempts of the erased sessions ids (see largestKey): keys
// of the tenant's slot, which the sweep of the sessions' own slots does not reach. One round trip.
func (s *Store) forgetLargest(ctx context.Context, tenant string, ids map[string]bool) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	keys := make([]string, 0, len(ids))
	for id := range ids {
		keys = append(keys, s.largestKey(tenant, id))
	}
	if err := s.client.Del(ctx, keys...).Err(); err != nil {
		return failure("erase learner", err)
	}
	return nil
}

// eraseSession runs eraseScript on session id: the number of keys deleted, or -1 when the
// session is not of tenant's learner.
func (s *Store) eraseSession(ctx context.Context, tenant, id, member string) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	keys := append(s.keys(id), s.prefix+":{"+id+"}:turn")
	n, err := eraseScript.Run(ctx, s.client, keys, tenantHeader(tenant), member).Int64()
	if err != nil {
		return 0, failure("erase learner", err)
	}
	return n, nil
}

// sweepCount is how many keys one SCAN step of sweep asks for.
const sweepCount = 1000

// sweep deletes every key of the sessions ids (keys {prefix}:{<id>}:…), scanning the whole
// keyspace once (every master of a cluster).
func (s *Store) sweep(ctx context.Context, ids map[string]bool) error {
	pattern := globEscape(s.prefix) + ":{*}:*"
	head := s.prefix + ":{"
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := s.scanStep(ctx, c, cursor, pattern)
			if err != nil {
				return failure("erase learner", err)
			}
			var doomed []string
			for _, k := range keys {
				id, _, ok := strings.Cut(strings.TrimPrefix(k, head), "}:")
				if ok && strings.HasPrefix(k, head) && ids[id] {
					doomed = append(doomed, k)
				}
			}
			if err := s.unlink(ctx, c, doomed); err != nil {
				return failure("erase learner", err)
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, s.client)
}

// scanStep is one SCAN of c within the operation timeout.
func (s *Store) scanStep(ctx context.Context, c redis.Cmdable, cursor uint64, pattern string) ([]string, uint64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return c.Scan(ctx, cursor, pattern, sweepCount).Result()
}

// unlink deletes keys, one command each in one pipeline: the keys of different sessions are
// in different slots, which one multi-key command may not span on a cluster.
func (s *Store) unlink(ctx context.Context, c redis.Cmdable, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var _ coach.LearnerAudit = (*SafetyAudit)(nil)

// learnerMembers returns how a record of learner's encoding holds it: `,"learner":{"ref":"<ref>"`
// (safety.Learner), or, in a record written before the learner was an object, `,"learner":"<ref>"`;
// either followed by ',' or '}'. (Record's learner is never its first member.)
func learnerMembers(learner string) []string {
	ref := jsonString(learner)
	return []string{`,"learner":{"ref":` + ref, `,"learner":` + ref}
}

// auditPage is how many records one XRANGE of LearnerSafetyEvents reads.
const auditPage = 1000

// LearnerSafetyEvents calls each with the audit records of learner of tenant within the
// retention, oldest first, reading the tenant's stream a page (auditPage records) at a time.
func (a *SafetyAudit) LearnerSafetyEvents(ctx context.Context, tenant, learner string, each func(safety.Record) error) error {
	members := learnerMembers(learner)
	start := a.cutoff()
	for {
		msgs, err := a.client.XRangeN(ctx, a.key(tenant), start, "+", auditPage).Result()
		if err != nil {
			return failure("safety audit", err)
		}
		for _, m := range msgs {
			s, _ := m.Values["r"].(string)
			if !holdsMember(s, members[0]) && !holdsMember(s, members[1]) {
				continue
			}
			var r safety.Record
			if err := json.Unmarshal([]byte(s), &r); err != nil || r.Learner.Ref != learner {
				continue
			}
			r.ID, r.Tenant = m.ID, tenant
			if err := each(r); err != nil {
				return err
			}
		}
		if len(msgs) < auditPage {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// holdsMember reports whether the JSON object s has member (see learnerMembers) as one of its
// members.
func holdsMember(s, member string) bool {
	i := strings.Index(s, member)
	return i >= 0 && i+len(member) < len(s) && (s[i+len(member)] == ',' || s[i+len(member)] == '}')
}

// eraseAuditScript removes the records of one learner from a tenant's audit stream by writing
// the stream anew without them, with every other record under its own id and the stream's TTL
// kept. XDEL would only mark them deleted: their bytes would stay in the stream's nodes, in
// memory and in RDB snapshots, until every other record of the same node went too.
//
// KEYS: the stream. ARGV: the learner's members (see learnerMembers). Returns how many records it
// removed.
var eraseAuditScript = redis.NewScript(`
local entries = redis.call('XRANGE', KEYS[1], '-', '+')
local keep, hits = {}, 0
for _, e in ipairs(entries) do
  local hit = false
  local f = e[2]
  for i = 2, #f, 2 do
    for _, m in ipairs(ARGV) do
      local _, j = string.find(f[i], m, 1, true)
      local after = j and string.sub(f[i], j + 1, j + 1)
      if after == ',' or after == '}' then
        hit = true
      end
    end
  end
  if hit then
    hits = hits + 1
  else
    keep[#keep + 1] = e
  end
end
if hits == 0 then
  return 0
end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
for _, e in ipairs(keep) do
  redis.call('XADD', KEYS[1], e[1], unpack(e[2]))
end
if #keep > 0 and ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return hits
`)

// EraseLearnerSafetyEvents deletes every audit record of learner of tenant, leaving no byte of
// them in the stream (see eraseAuditScript). It is one script over the tenant's whole stream
// (at most about DefaultAuditMaxEntries records): Redis serves nothing else while it runs, so
// an erasure of a tenant with a full stream pauses that Redis for a moment. Other tenants'
// streams are other keys, untouched.
func (a *SafetyAudit) EraseLearnerSafetyEvents(ctx context.Context, tenant, learner string) error {
	if err := eraseAuditScript.Run(ctx, a.client, []string{a.key(tenant)}, learnerMembers(learner)[0], learnerMembers(learner)[1]).Err(); err != nil {
		return failure("safety audit", err)
	}
	return nil
}
