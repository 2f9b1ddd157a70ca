package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// SafetyAudit keeps the audit records of safety checks (coach.SafetyAudit) and reads them back
// for the tenant's operator keys (GET /v1/safety/events).
//
// Each tenant has one stream of its own:
//
//	{prefix}:{audit:<tenant>}   a stream: one entry per record, with one member r (the record's
//	                            JSON: safety.Record without its id and tenant)
//
// The stream's entry id is the record's ID and the reader's cursor. Because every tenant has its
// own stream, trimmed to its own MaxEntries, one tenant's audit volume never evicts another
// tenant's records, and a reader of one tenant never sees another's. The key is one hash tag, so
// the stream lives in one slot of a cluster (Redis Cluster) and is written by one node.
//
// Records are kept for Retention: each Audit trims the stream of the tenants it writes to
// records newer than Retention (XTRIM MINID ~, whole nodes of the stream at a time) and sets the
// stream to expire Retention after the write, so a tenant that stops writing loses its stream
// as a whole; the reader never answers a record older than Retention, whatever the trimming has
// left. A record holds no learner text: safety.Record has no member for it.
//
// Each learner (each session, for records without a learner reference) has a fair share of its
// tenant's stream: at most MaxEntries/100 records a UTC day (learnerShare), counted in
// {prefix}:{audit:<tenant>}:day:<date>:<sha256 of the learner or "s:"+session>, which expires
// after two days. Records past the share are not written; crisis records always are, and a
// learner has one crisis an episode, since the hold (which follows the learner) answers the
// rest as held turns. So one learner's flood (held turns are answered without the model in
// microseconds) fills at most a hundredth of the stream a day, and evicts no other learner's
// records before their retention unless a hundred learners of the tenant flood a whole day
// each; a per-learner stream would make the tenant's reader merge streams, and a cap per
// learner within one stream cannot be trimmed by learner.
//
// Audit is one round trip whatever the number of records and tenants (two the first time after
// Redis lost its scripts): one pipeline of a script per record (the share's INCR, then XADD
// MAXLEN ~ MaxEntries), then an XTRIM and a PEXPIRE per tenant. In a cluster
// go-redis sends the pipeline's commands to their tenants' nodes at once.
//
// The embedded Redis (miniredis) supports all of it (XADD with MAXLEN, XTRIM MINID, XRANGE with
// an exclusive start); it trims exactly where Redis trims approximately. Its saved file
// (persist.go) keeps no streams: on the embedded default the audit lasts as long as the process.
type SafetyAudit struct {
	client     redis.UniversalClient
	prefix     string
	retention  time.Duration
	maxEntries int64
	// now is the clock of the retention cutoff; time.Now but in tests.
	now func() time.Time
}

// DefaultAuditMaxEntries bounds a tenant's audit stream: at one record per check, two checks a
// turn and a classifier beside the built-in screen, about 25,000 turns; a few hundred bytes per
// record, some 30 MB of Redis per tenant at most.
const DefaultAuditMaxEntries = 100_000

// learnerShareDivisor divides MaxEntries into the daily share of one learner.
const learnerShareDivisor = 100

// shareTTL keeps a day's share counter past the day's end, whatever the clocks' skew.
const shareTTL = 48 * time.Hour

// DefaultAuditRetention is the retention of a SafetyAudit made without one, COACH_TRANSCRIPT_RETENTION's default.
const DefaultAuditRetention = 365 * 24 * time.Hour

// NewSafetyAudit returns the audit of client under prefix (Options.Prefix; "" for the default),
// keeping records for retention (COACH_TRANSCRIPT_RETENTION; 0: DefaultAuditRetention) and at
// most about maxEntries (0: DefaultAuditMaxEntries) per tenant.
func NewSafetyAudit(client redis.UniversalClient, prefix string, retention time.Duration, maxEntries int) *SafetyAudit {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if retention <= 0 {
		retention = DefaultAuditRetention
	}
	if maxEntries <= 0 {
		maxEntries = DefaultAuditMaxEntries
	}
	return &SafetyAudit{client: client, prefix: prefix, retention: retention, maxEntries: int64(maxEntries), now: time.Now}
}

// learnerShare is how many records one learner may add to its tenant's stream a day.
func (a *SafetyAudit) learnerShare() int64 { return max(1, a.maxEntries/learnerShareDivisor) }

// shareKey returns the key of the day's share counter of r's learner (its session's without one).
func (a *SafetyAudit) shareKey(r safety.Record, day string) string {
	who := r.Learner.Ref
	if who == "" {
		who = "s:" + r.Session
	}
	h := sha256.Sum256([]byte(who))
	return a.key(r.Tenant) + ":day:" + day + ":" + hex.EncodeToString(h[:])
}

var _ coach.SafetyAudit = (*SafetyAudit)(nil)

func (a *SafetyAudit) key(tenant string) string { return a.prefix + ":{audit:" + tenant + "}" }

// cutoff returns the id below which records are past retention.
func (a *SafetyAudit) cutoff() string {
	return strconv.FormatInt(a.now().Add(-a.retention).UnixMilli(), 10) + "-0"
}

// auditScript adds one record to its tenant's stream within its learner's share of the day.
//
// KEYS: the stream, the share's counter (both of the tenant's hash tag). ARGV: the share, the
// stream's MaxEntries, the record, "1" when the record is written whatever the share (a
// crisis), the counter's TTL (ms). Returns 1 when the record was written, 0 when not.
var auditScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local n = redis.call('INCR', KEYS[2])
if n == 1 then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
if n > tonumber(ARGV[1]) and ARGV[4] ~= '1' then
  return 0
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'r', ARGV[3])
return 1
`)

// Audit appends records, each to the stream of its tenant, in one round trip.
func (a *SafetyAudit) Audit(ctx context.Context, records []safety.Record) error {
	if len(records) == 0 {
		return nil
	}
	values := make([][]byte, len(records))
	for i, r := range records {
		r.ID = ""
		b, err := json.Marshal(r)
		if err != nil {
			return coach.Wrap(fmt.Errorf("encoding an audit record: %w", err), coach.KindInternal, coach.CodeInternal, "the audit record could not be encoded")
		}
		values[i] = b
	}
	day := a.now().UTC().Format("2006-01-02")
	cutoff := a.cutoff()
	write := func(todo []int) ([]int, error) {
		cmds := make([]*redis.Cmd, len(todo))
		_, err := a.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			seen := map[string]bool{}
			for j, i := range todo {
				r := records[i]
				always := "0"
				if r.Action == safety.ActionCrisis {
					always = "1"
				}
				cmds[j] = auditScript.EvalSha(ctx, p, []string{a.key(r.Tenant), a.shareKey(r, day)},
					a.learnerShare(), a.maxEntries, values[i], always, shareTTL.Milliseconds())
				seen[r.Tenant] = true
			}
			for tenant := range seen {
				p.XTrimMinIDApprox(ctx, a.key(tenant), cutoff, 0)
				p.PExpire(ctx, a.key(tenant), a.retention)
			}
			return nil
		})
		// A Redis that lost its scripts (a restart, SCRIPT FLUSH) ran none of those it
		// refused with NOSCRIPT: they are sent again once the script is loaded.
		var again []int
		for j, c := range cmds {
			if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
				again = append(again, todo[j])
			}
		}
		if len(again) > 0 {
			return again, nil
		}
		return nil, err
	}
	all := make([]int, len(records))
	for i := range all {
		all[i] = i
	}
	again, err := write(all)
	if err == nil && len(again) > 0 {
		if err = auditScript.Load(ctx, a.client).Err(); err == nil {
			_, err = write(again)
		}
	}
	if err != nil {
		return failure("safety audit", err)
	}
	return nil
}

// streamID is the form of an entry id, the cursor of SafetyEvents.
var streamID = regexp.MustCompile(`^[0-9]{1,19}-[0-9]{1,19}$`)

// SafetyEvents returns up to limit records of tenant after the record whose id is after ("" for
// the oldest kept), oldest first, and the cursor of the next page: the last record's id, or after
// itself when there is nothing newer yet. A malformed after is an invalid_input error.
func (a *SafetyAudit) SafetyEvents(ctx context.Context, tenant, after string, limit int) ([]safety.Record, string, error) {
	start := a.cutoff()
	if after != "" {
		if !streamID.MatchString(after) {
			return nil, "", coach.FieldError("after", "after must be the id of an event (as in next)")
		}
		if !idBefore(after, start) {
			start = "(" + after
		}
	}
	msgs, err := a.client.XRangeN(ctx, a.key(tenant), start, "+", int64(limit)).Result()
	if err != nil {
		return nil, "", failure("safety audit", err)
	}
	next := after
	out := make([]safety.Record, 0, len(msgs))
	for _, m := range msgs {
		next = m.ID
		s, _ := m.Values["r"].(string)
		var r safety.Record
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			// Not written by Audit: passed over, so the cursor still moves beyond it.
			continue
		}
		r.ID, r.Tenant = m.ID, tenant
		out = append(out, r)
	}
	return out, next, nil
}

// idBefore reports whether stream id a sorts before b; both are well formed.
func idBefore(a, b string) bool {
	ams, aseq, _ := strings.Cut(a, "-")
	bms, bseq, _ := strings.Cut(b, "-")
	x, _ := strconv.ParseUint(ams, 10, 64)
	y, _ := strconv.ParseUint(bms, 10, 64)
	if x != y {
		return x < y
	}
	xs, _ := strconv.ParseUint(aseq, 10, 64)
	ys, _ := strconv.ParseUint(bseq, 10, 64)
	return xs < ys
}
