package turns

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// ErrTooManyReaders refuses a resumer of a turn that already has as many on this instance as
// Config.MaxReadersPerTurn allows. A place frees when a resumer leaves or the turn ends; its
// RetryAfter spreads a refused crowd's retries over a read's block rather than letting each
// ask again at once.
var ErrTooManyReaders = &coach.Error{
	Kind: coach.KindLimited, Code: coach.CodeTooManyReaders,
	Message: "this turn has as many readers on this instance as it may; retry later", RetryAfter: readBlock,
}

// ErrFellBehind ends a follower that did not take its batches as fast as the turn wrote them:
// its client can resume from the last line it got.
var ErrFellBehind = errors.New("turns: the reader fell behind the turn")

// Defaults of the hub.
const (
	// DefaultMaxReadersPerTurn is COACH_MAX_READERS_PER_TURN's default.
	DefaultMaxReadersPerTurn = 8
	// readBlock is the longest a read of a turn's log waits for new lines (Turns.ReadBlock);
	// when it passes with none, the reader asks whether the turn still runs (see
	// reader.silent).
	readBlock = 5 * time.Second
	// followerQueue is how many batches a follower may have waiting: at a batch per 64 lines
	// or 500 ms (defaultBounds), thousands of lines or half a minute of a turn. A follower
	// further behind is dropped, so that a client that stopped reading holds neither the
	// reader nor more than this of the turn.
	followerQueue = 64
	// keptBatches bounds the batches a reader keeps for late followers: as many as the log
	// itself keeps of a turn (defaultBounds.entries), so a late follower misses nothing
	// that the log would have given it.
	keptBatches = 4096
)

// hub feeds every follower of a turn on this instance from one reader of the turn's log, so
// that however many clients resume a turn, this instance holds one blocking read of it.
type hub struct {
	log        Log
	maxPerTurn int
	block      time.Duration
	// lost ends the log of turn of session, found running on instance, when that instance is
	// dead (Turns.lost), and reports whether it did.
	lost func(ctx context.Context, session, turn, instance string) (bool, error)
	// announce tells the instance that runs turn of session that it is followed
	// (Turns.announce).
	announce func(ctx context.Context, session, turn string)
	queue    int
	kept     int

	mu      sync.Mutex
	readers map[turnKey]*reader
}

type turnKey struct{ session, turn string }

func newHub(log Log, maxPerTurn int, block time.Duration, lost func(ctx context.Context, session, turn, instance string) (bool, error), announce func(ctx context.Context, session, turn string)) *hub {
	if maxPerTurn <= 0 {
		maxPerTurn = DefaultMaxReadersPerTurn
	}
	return &hub{
		log: log, maxPerTurn: maxPerTurn, block: block, lost: lost, announce: announce, queue: followerQueue, kept: keptBatches,
		readers: map[turnKey]*reader{},
	}
}

// reader is the one reader of a turn's log on this instance and the batches it has read, kept
// while the turn has followers here.
type reader struct {
	hub  *hub
	key  turnKey
	stop context.CancelFunc

	// mu guards what follows; hub.mu, when both are held, is taken first.
	mu sync.Mutex
	// batches are the batches read so far after the base first ones, which were let go.
	batches []Batch
	base    int
	// done is set once no batch will come: the turn's last batch was read, its log is gone,
	// or a read failed (err).
	done bool
	err  error
	// stopped is set once the reader has no followers left: it reads no more.
	stopped   bool
	followers map[*Follower]struct{}
}

// Follower is one resumer of a turn: it takes the batches of the turn's log, from its first,
// as the turn's one reader on this instance reads them.
type Follower struct {
	r    *reader
	wake chan struct{}
	// next is the index of the next batch to take; joined is how many batches the reader had
	// when the follower came (those cost the follower nothing: the reader keeps them anyway).
	next, joined int
	dropped      bool
}

// follow adds a follower of turn of session, starting the turn's reader if it has none here.
func (h *hub) follow(session, turn string) (*Follower, error) {
	k := turnKey{session, turn}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.readers[k]
	if r != nil {
		r.mu.Lock()
		// A reader that stopped, or failed, is left to the followers it has.
		if r.stopped || r.err != nil {
			r.mu.Unlock()
			r = nil
		}
	}
	if r == nil {
		// The reader starts with its first follower already in place: a reader without
		// followers stops (see add), and its first read can come back before this goroutine
		// runs again.
		ctx, stop := context.WithCancel(context.Background())
		r = &reader{hub: h, key: k, stop: stop, followers: map[*Follower]struct{}{}}
		h.readers[k] = r
		f := &Follower{r: r, wake: make(chan struct{}, 1)}
		r.followers[f] = struct{}{}
		go r.run(ctx)
		return f, nil
	}
	defer r.mu.Unlock()
	if len(r.followers) >= h.maxPerTurn {
		return nil, ErrTooManyReaders
	}
	f := &Follower{r: r, wake: make(chan struct{}, 1), next: r.base, joined: r.base + len(r.batches)}
	r.followers[f] = struct{}{}
	return f, nil
}

// Next returns the turn's next batch, waiting for it until ctx ends. It returns false when
// there is none to come: the turn's last batch was taken, its log is gone, the read failed,
// the follower fell behind (see Err), or ctx ended.
func (f *Follower) Next(ctx context.Context) (Batch, bool) {
	r := f.r
	for {
		r.mu.Lock()
		if f.dropped {
			r.mu.Unlock()
			return Batch{}, false
		}
		f.next = max(f.next, r.base)
		if i := f.next - r.base; i < len(r.batches) {
			b := r.batches[i]
			f.next++
			r.mu.Unlock()
			return b, true
		}
		done := r.done
		r.mu.Unlock()
		if done {
			return Batch{}, false
		}
		select {
		case <-f.wake:
		case <-ctx.Done():
			return Batch{}, false
		}
	}
}

// Err tells why Next returned false: ErrFellBehind, the reader's failure, or nil.
func (f *Follower) Err() error {
	r := f.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.dropped {
		return ErrFellBehind
	}
	return r.err
}

// signal wakes the follower if it waits in Next.
func (f *Follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Close ends the follower. The turn's reader stops with its last follower.
func (f *Follower) Close() {
	h, r := f.r.hub, f.r
	h.mu.Lock()
	defer h.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.followers, f)
	if len(r.followers) == 0 && !r.stopped {
		r.stopped = true
		r.stop()
		if h.readers[r.key] == r {
			delete(h.readers, r.key)
		}
	}
}

// run reads the turn's log until its last batch, a failure, or its last follower's leaving
// (ctx).
func (r *reader) run(ctx context.Context) {
	// The turn's instance writes its lines as they come only once it knows they are read.
	r.hub.announce(ctx, r.key.session, r.key.turn)
	cursor := ""
	for {
		batches, err := r.hub.log.Read(ctx, r.key.session, r.key.turn, cursor, r.hub.block)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.finish(err)
			return
		}
		if len(batches) == 0 {
			if r.silent(ctx, cursor) {
				r.finish(nil)
				return
			}
			continue
		}
		cursor = batches[len(batches)-1].Cursor
		if r.add(batches) {
			return
		}
	}
}

// silent is the reader's check when nothing came for a read's whole block: it reports whether
// the turn's log will bring no more. A turn still running on an instance that died is ended in
// its log with a turn_lost line (hub.lost), which the next read brings like any last batch. A
// log that is gone (expired, or its instance died before writing its last batch) never ends on
// its own, so a turn that is no longer the session's running one ends its followers once a
// last read finds nothing after cursor.
func (r *reader) silent(ctx context.Context, cursor string) bool {
	cur, running, instance, err := r.hub.log.Current(ctx, r.key.session)
	if err == nil && cur == r.key.turn && running {
		// An announcement can be lost (pub/sub delivers at most once): made again, it costs
		// a reader who waited in vain at most one block.
		r.hub.announce(ctx, r.key.session, r.key.turn)
		if r.hub.lost != nil {
			// A failed check is asked again after the next block; the turn is not ended on
			// a guess.
			_, _ = r.hub.lost(ctx, r.key.session, r.key.turn, instance)
		}
		return false
	}
	more, _ := r.hub.log.Read(ctx, r.key.session, r.key.turn, cursor, time.Millisecond)
	if len(more) == 0 {
		return true
	}
	return r.add(more)
}

// add keeps batches for the followers, drops those that fell too far behind, and wakes them
// all. It reports whether the turn's last batch was among them; the reader is done then.
func (r *reader) add(batches []Batch) (end bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A follower is behind by the batches it has not taken of those read since it came; one
	// that has a whole queue of them waiting when more come is dropped. One read can bring
	// more than a queue (the log's reads take up to hundreds of batches), so the batches just
	// read do not count against a follower that keeps up.
	last := r.base + len(r.batches)
	for f := range r.followers {
		if last-max(f.next, f.joined) >= r.hub.queue {
			f.dropped = true
			delete(r.followers, f)
			f.signal()
		}
	}
	for _, b := range batches {
		r.batches = append(r.batches, b)
		end = end || b.End
	}
	if over := len(r.batches) - r.hub.kept; over > 0 {
		r.batches = append(r.batches[:0:0], r.batches[over:]...)
		r.base += over
	}
	r.done = end
	for f := range r.followers {
		f.signal()
	}
	if len(r.followers) == 0 && !r.stopped {
		r.leave()
	}
	return end
}

// finish marks the reader done with err and wakes its followers.
func (r *reader) finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.err = true, err
	for f := range r.followers {
		f.signal()
	}
}

// leave stops a reader whose followers were all dropped. r.mu is held, and the hub's lock is
// taken before it elsewhere, so the reader leaves the hub's map on a goroutine of its own.
func (r *reader) leave() {
	r.stopped = true
	r.stop()
	go func() {
		h := r.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.readers[r.key] == r {
			delete(h.readers, r.key)
		}
	}()
}
