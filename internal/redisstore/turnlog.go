package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/turns"
)

// TurnLog keeps the lines of running and recent turns for resume, and carries stops between
// instances: the turns.Log of the gateway, for resumable turns.
//
// A session has, besides the keys of Store, a current-turn pointer and one log per recent turn:
//
//	{prefix}:{<id>}:turn          a hash: id (the turn's), state (running or ended), inst
//	                              (the id of the instance that runs it, see Instances) and in
//	                              (the turn's learner input, see Input)
//	{prefix}:{<id>}:tl:<turn>     a stream: one entry per batch of lines, with members
//	                              f (the number of lines before it), l (the lines) and, on the
//	                              turn's last batch, e
//
// Both share the session's hash tag, so a batch and the pointer are written to one node. An
// Append writes the batches of many turns (the instance's writer, in internal/turns, gathers
// them) in one pipeline: a turn's first batch is XADD and PEXPIRE of the log and HSET (input
// included) and PEXPIRE of the pointer (four commands), its last one script (XADD, and HSET of
// the pointer if it still names the turn), and every batch between them a bare XADD: the
// expiry is set once, to the turn's whole life plus the resume TTL (turns.Write.TTL). The log's size is bounded by its writer
// (internal/turns), which keeps a turn's first lines, so the XADD does not trim. Readers follow
// a log with blocking XREADs, on a client of their own (WithReaders) so that however long they
// block they never hold a connection the session store needs. Stops are published on the
// channel {prefix}:turnstop and follows (a reader has started on a turn, see turns.Log) on
// {prefix}:turnfollow, both as "<session> <turn>"; every instance subscribes to both once
// (Subscribe).
//
// A turn whose instance died is ended by EndLost: one script on the session's slot appends the
// last batch and marks the pointer ended, so that of the readers on every instance that find it
// lost at once only one ends it.
//
// The embedded Redis (miniredis) supports all of it, XREAD BLOCK and pub/sub included; its
// keys expire on its clock's ticks (embeddedTick) rather than to the millisecond.
type TurnLog struct {
	client redis.UniversalClient
	// readers is the client of Read: client unless WithReaders gave one of its own.
	readers redis.UniversalClient
	prefix  string
	// instance is the id of this instance, which the pointer of every turn it runs names.
	instance string
}

// NewTurnLog returns the TurnLog of client under prefix (Options.Prefix; "" for the default) for
// the turns of instance, the id this instance keeps alive in Instances.
func NewTurnLog(client redis.UniversalClient, prefix, instance string) *TurnLog {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &TurnLog{client: client, readers: client, prefix: prefix, instance: instance}
}

// WithReaders returns a TurnLog like l whose Read blocks on readers (see OpenPool), while its
// writes, Current, Stop and Subscribe stay on l's client.
func (l *TurnLog) WithReaders(readers redis.UniversalClient) *TurnLog {
	c := *l
	c.readers = readers
	return &c
}

var _ turns.Log = (*TurnLog)(nil)

func (l *TurnLog) pointerKey(session string) string { return l.prefix + ":{" + session + "}:turn" }
func (l *TurnLog) logKey(session, turn string) string {
	return l.prefix + ":{" + session + "}:tl:" + turn
}
func (l *TurnLog) channel() string       { return l.prefix + ":turnstop" }
func (l *TurnLog) followChannel() string { return l.prefix + ":turnfollow" }

// Append writes entries (see turns.Write) in one pipeline: one round trip, or one per node of a
// cluster, whose pipeline go-redis splits by slot, keeping each node's commands in order. An
// entry with a State always adds a log entry, empty or not, so that the log exists, and has
// its expiry, before the writes between the first and the last, which add an entry and nothing
// else.
func (l *TurnLog) Append(ctx context.Context, entries []turns.Entry) []error {
	if len(entries) == 0 {
		return nil
	}
	cmds := make([][]redis.Cmder, len(entries))
	_, err := l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			cmds[i] = l.queue(ctx, p, e, false)
		}
		return nil
	})
	if err == nil {
		return nil
	}
	errs := make([]error, len(entries))
	var again []int
	for i, cs := range cmds {
		for _, c := range cs {
			if err := c.Err(); err != nil {
				errs[i] = wrapErr(err)
				if redis.HasErrorPrefix(err, "NOSCRIPT") {
					again = append(again, i)
				}
				break
			}
		}
	}
	if len(again) > 0 {
		// A Redis that lost its scripts (a restart, a failover) gets the end script whole.
		_, _ = l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = l.queue(ctx, p, entries[i], true)
			}
			return nil
		})
		for _, i := range again {
			errs[i] = nil
			for _, c := range cmds[i] {
				if err := c.Err(); err != nil {
					errs[i] = wrapErr(err)
					break
				}
			}
		}
	}
	if !slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		return nil
	}
	return errs
}

// queue adds e's commands to p and returns them: a first write's XADD, HSET and PEXPIREs, a
// bare XADD between (none for a batch of no lines), and a last write's endScript (whole when
// whole is set, else by its sha).
func (l *TurnLog) queue(ctx context.Context, p redis.Pipeliner, e turns.Entry, whole bool) []redis.Cmder {
	key, ptr := l.logKey(e.Session, e.Turn), l.pointerKey(e.Session)
	if e.State == turns.Ended && e.TTL == 0 {
		keys := []string{key, ptr}
		args := []any{e.First, e.Lines, e.Turn}
		if whole {
			return []redis.Cmder{endScript.Eval(ctx, p, keys, args...)}
		}
		return []redis.Cmder{endScript.EvalSha(ctx, p, keys, args...)}
	}
	if e.State == "" && len(e.Lines) == 0 {
		return nil
	}
	values := []any{"f", e.First, "l", e.Lines}
	if e.State == turns.Ended {
		values = append(values, "e", 1)
	}
	out := []redis.Cmder{p.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: values})}
	if e.State == "" {
		return out
	}
	fields := []any{"id", e.Turn, "state", e.State, "inst", l.instance}
	if e.Input != nil {
		fields = append(fields, "in", e.Input)
	}
	out = append(out, p.HSet(ctx, ptr, fields...))
	if e.TTL > 0 {
		out = append(out, p.PExpire(ctx, key, e.TTL), p.PExpire(ctx, ptr, e.TTL))
	}
	return out
}

// endScript is a turn's last write. KEYS: the turn's log, the session's pointer. ARGV: the
// number of lines before the batch, its lines, the turn. It marks the pointer ended only while
// the pointer names the turn: the session's next turn, once its lock was free, may have
// pointed the session at itself before this write.
var endScript = redis.NewScript(`
redis.call('XADD', KEYS[1], '*', 'f', ARGV[1], 'l', ARGV[2], 'e', 1)
if redis.call('HGET', KEYS[2], 'id') == ARGV[3] then
  redis.call('HSET', KEYS[2], 'state', 'ended')
end
return 1
`)

// Current reads the session's current-turn pointer.
func (l *TurnLog) Current(ctx context.Context, session string) (string, bool, string, error) {
	v, err := l.client.HMGet(ctx, l.pointerKey(session), "id", "state", "inst").Result()
	if err != nil {
		return "", false, "", failure("turn log", err)
	}
	id, _ := v[0].(string)
	state, _ := v[1].(string)
	instance, _ := v[2].(string)
	return id, state == turns.Running, instance, nil
}

// endLostScript is EndLost. KEYS: the pointer, the turn's log. ARGV: the turn, its instance,
// the last line, the ttl in milliseconds. The last line's number follows the
// log's last batch (its f and its lines), so that a reader resuming after N lines gets it.
var endLostScript = redis.NewScript(`
local p = redis.call('HMGET', KEYS[1], 'id', 'state', 'inst')
if p[1] ~= ARGV[1] or p[2] ~= 'running' or p[3] ~= ARGV[2] then
  return 0
end
local first = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'f' then
      first = first + tonumber(fields[i + 1])
    elseif fields[i] == 'l' then
      local _, n = string.gsub(fields[i + 1], '\n', '')
      first = first + n
    end
  end
end
redis.call('XADD', KEYS[2], '*', 'f', first, 'l', ARGV[3], 'e', 1)
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('HSET', KEYS[1], 'state', 'ended')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// EndLost ends a lost turn (see turns.Log) in one script.
func (l *TurnLog) EndLost(ctx context.Context, session, turn, instance string, line []byte, ttl time.Duration) (bool, error) {
	keys := []string{l.pointerKey(session), l.logKey(session, turn)}
	n, err := endLostScript.Run(ctx, l.client, keys, turn, instance, line, max(ttl, time.Millisecond).Milliseconds()).Int()
	if err != nil {
		return false, failure("turn log", err)
	}
	return n == 1, nil
}

// Read returns the batches after cursor, blocking up to block (at least a millisecond) for
// the first.
func (l *TurnLog) Read(ctx context.Context, session, turn, cursor string, block time.Duration) ([]turns.Batch, error) {
	if cursor == "" {
		cursor = "0"
	}
	res, err := l.readers.XRead(ctx, &redis.XReadArgs{
		Streams: []string{l.logKey(session, turn), cursor}, Count: 256, Block: max(block, time.Millisecond),
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, failure("turn log", err)
	}
	var out []turns.Batch
	for _, st := range res {
		for _, m := range st.Messages {
			b := turns.Batch{Cursor: m.ID}
			s, _ := m.Values["f"].(string)
			b.First, _ = strconv.ParseInt(s, 10, 64)
			lines, _ := m.Values["l"].(string)
			b.Lines = []byte(lines)
			_, b.End = m.Values["e"]
			out = append(out, b)
		}
	}
	return out, nil
}

// Stop publishes a stop of turn of session to every instance.
func (l *TurnLog) Stop(ctx context.Context, session, turn string) error {
	return wrapErr(l.client.Publish(ctx, l.channel(), session+" "+turn).Err())
}

// Follow publishes to every instance that a reader follows turn of session.
func (l *TurnLog) Follow(ctx context.Context, session, turn string) error {
	return wrapErr(l.client.Publish(ctx, l.followChannel(), session+" "+turn).Err())
}

// Subscribe subscribes to the stops and the follows and calls stop or follow with each one
// until ctx ends. It returns once the subscription is in place, so that a message published
// after it is never missed; go-redis resubscribes by itself after a lost connection.
func (l *TurnLog) Subscribe(ctx context.Context, stop, follow func(session, turn string)) error {
	ps := l.client.Subscribe(ctx, l.channel(), l.followChannel())
	for range 2 {
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return wrapErr(err)
		}
	}
	ch := ps.Channel()
	go func() {
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				session, turn, ok := strings.Cut(m.Payload, " ")
				switch {
				case !ok:
				case m.Channel == l.channel():
					stop(session, turn)
				default:
					follow(session, turn)
				}
			}
		}
	}()
	return nil
}

// wrapErr is failure for an error that may be nil.
func wrapErr(err error) error {
	if err == nil {
		return nil
	}
	return failure("turn log", err)
}
