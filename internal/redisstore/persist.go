package redisstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Saving the embedded Redis. miniredis has no persistence of its own (no RDB, no AOF), so a
// gateway run with nothing configured would lose every session on restart. SavedEmbedded keeps
// the embedded server's keys in a file of its own format: a JSON document of every key with its
// type, value and absolute expiry time, written atomically (a temporary file in the same
// directory, synced, then renamed over the old one), so that a crash during a save leaves the
// previous file whole.

// SnapshotFormat and SnapshotVersion identify a saved file. A file of another format or a newer
// version is not read (it is set aside, as a corrupt one is).
const (
	SnapshotFormat  = "coachgw-embedded-redis"
	SnapshotVersion = 1
)

// SnapshotFile is the name of the saved file in its directory.
const SnapshotFile = "embedded-redis.json"

// snapshot is the saved file.
type snapshot struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	SavedAt time.Time     `json:"savedAt"`
	Keys    []snapshotKey `json:"keys"`
}

// snapshotKey is one key. Exactly the member of its type is set: Value (string), Items (list,
// in order), Fields (hash), Members (set) or Scores (sorted set). Base64 says every string of
// the key (name excluded) is base64, which is how a key with a value that is not UTF-8 is kept
// whole. ExpiresAt is absent for a key without a TTL; time passes while the gateway is stopped,
// as with Redis's own files.
type snapshotKey struct {
	Key       string             `json:"key"`
	Type      string             `json:"type"`
	ExpiresAt *time.Time         `json:"expiresAt,omitempty"`
	Base64    bool               `json:"base64,omitempty"`
	Value     *string            `json:"value,omitempty"`
	Items     []string           `json:"items,omitempty"`
	Fields    map[string]string  `json:"fields,omitempty"`
	Members   []string           `json:"members,omitempty"`
	Scores    map[string]float64 `json:"scores,omitempty"`
}

// saveBatch is the most keys one transaction of a save reads (see readBatch), so the longest
// the server is held by a save. The keys of one hash tag (one session's document, transcript and
// counters) always share a batch, so that a session is saved as one commit left it, never half
// of one commit and half of the next; a tag with more keys than this is read alone.
const saveBatch = 96

// SavedEmbedded is an embedded Redis (see Embedded) whose keys are loaded from a file at start
// and saved to it by Save. It is safe for concurrent use.
type SavedEmbedded struct {
	m      *embeddedServer
	client *redis.Client
	// reader is the client of saves: a client of its own, so that a save's reads never count
	// as changes (see writes).
	reader *redis.Client
	path   string
	// writes counts the commands of client that may have changed a key (see changeHook): a
	// save with nothing counted since the last one leaves the file as it is, without reading
	// the server.
	writes atomic.Int64

	// mu makes saves take turns, so that an older snapshot never replaces a newer one.
	mu     sync.Mutex
	closed bool
	// refuse, when set, is why Save must not write: the file there could not be set aside.
	refuse error
	// saved says the file holds the server as it was when writes was savedAt; lastKeys is how
	// many keys it holds.
	saved    bool
	savedAt  int64
	lastKeys int
	// betweenBatches, when set (by tests), is called after each batch a save reads.
	betweenBatches func()
}

// LoadReport says what StartSaved found in its file.
type LoadReport struct {
	// Path is the file.
	Path string
	// Found says the file existed; Keys is how many keys were loaded from it, Expired how many
	// had expired while the gateway was stopped, and Skipped how many had a type this version
	// cannot restore.
	Found                  bool
	Keys, Expired, Skipped int
	// SavedAt is when the file was written.
	SavedAt time.Time
	// Problem, when set, is why the file could not be read; it was renamed to SetAside (or, if
	// even that failed, left in place, and Save refuses to overwrite it). The server starts
	// empty either way.
	Problem  error
	SetAside string
	// Unwritable, when set, is why this run cannot save: nothing can be written in the file's
	// directory (it could not be created, or a file could not be made in it), and every Save
	// fails until that changes; or the file could not be read nor set aside, and Save refuses to
	// overwrite it. It is found at start so that the start log can say so, not only a save.
	Unwritable error
	// StaleTemps is how many temporary files of saves that never finished (the process was
	// killed mid-save) were removed at start: they hold learners' text and nothing reads them.
	StaleTemps int
	// Tightened, when set, is the mode the directory had before it was tightened to 0700;
	// Loose, when set, is why a directory open to others was left as it is.
	Tightened fs.FileMode
	Loose     error
}

// StartSaved starts an embedded Redis that keeps its state in path: the keys saved there are
// loaded before it serves. A file that cannot be read or parsed is not fatal: it is renamed to
// path.corrupt-<UTC time> (reported in the LoadReport, never deleted) and the server starts
// empty. The directory is created (0700) when missing, tightened to 0700 when it is open to
// others (see tighten), cleared of the temporary files of saves that never finished, and checked
// for writing, a failure reported as LoadReport.Unwritable. Only an embedded server that cannot
// start is an error.
func StartSaved(path string) (*SavedEmbedded, redis.UniversalClient, LoadReport, error) {
	m, c, err := startEmbedded()
	if err != nil {
		return nil, nil, LoadReport{}, err
	}
	s := &SavedEmbedded{m: m, client: c, reader: redis.NewClient(&redis.Options{Addr: m.Addr()}), path: path}
	c.AddHook(changeHook{&s.writes})
	dir := filepath.Dir(path)
	rep := LoadReport{}
	if _, err := os.Stat(dir); err == nil {
		rep.Tightened, rep.Loose = tighten(dir)
		rep.StaleTemps = removeStaleTemps(dir, filepath.Base(path))
	}
	loaded := s.load(time.Now())
	loaded.Tightened, loaded.Loose, loaded.StaleTemps = rep.Tightened, rep.Loose, rep.StaleTemps
	rep = loaded
	if rep.Problem != nil && rep.SetAside == "" {
		s.refuse = fmt.Errorf("redisstore: %s could not be read nor set aside; not overwriting it", path)
		rep.Unwritable = s.refuse
	} else {
		rep.Unwritable = checkWritable(dir)
	}
	return s, c, rep, nil
}

// tempPatterns are the names of the temporary files of a save (writeAtomic) and of the check
// at start (checkWritable), for the saved file named base.
func tempPatterns(base string) []string {
	return []string{"." + base + ".*.tmp", ".write-check-*.tmp"}
}

// removeStaleTemps removes the temporary files a save or a start killed midway left in dir, and
// returns how many. They are never read again, and a save's holds learners' text. Another
// gateway saving to the same directory at this instant could lose its save's file; two
// gateways must not share a data directory anyway, since each would overwrite the other's saves.
func removeStaleTemps(dir, base string) int {
	n := 0
	for _, pattern := range tempPatterns(base) {
		names, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, name := range names {
			if os.Remove(name) == nil {
				n++
			}
		}
	}
	return n
}

// tighten sets dir to 0700 when others may read or enter it (a COACH_DATA_DIR made 0777 by
// hand, or by a umask of 0), since the saved file holds every learner's text, and returns the
// mode it had. A directory that is shared (sticky, like /tmp) or holds files other than the
// gateway's is left as it is, with the reason: tightening it would lock other users or programs
// out of their own files. On Windows, where modes do not describe access, it does nothing.
func tighten(dir string) (was fs.FileMode, loose error) {
	if runtime.GOOS == "windows" {
		return 0, nil
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return 0, nil
	}
	mode := fi.Mode().Perm()
	if fi.Mode()&fs.ModeSticky != 0 {
		return 0, fmt.Errorf("redisstore: %s (mode %v) is a shared directory: not tightening it; give COACH_DATA_DIR a directory of its own", dir, mode)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("redisstore: %s (mode %v) cannot be listed: not tightening it: %w", dir, mode, err)
	}
	for _, e := range entries {
		if !ownFile(e.Name()) {
			return 0, fmt.Errorf("redisstore: %s (mode %v) holds files other than the gateway's (%q): not tightening it; give COACH_DATA_DIR a directory of its own", dir, mode, e.Name())
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return 0, fmt.Errorf("redisstore: tightening %s (mode %v) to 0700: %w", dir, mode, err)
	}
	return mode, nil
}

// ownFile says whether name is one of the files the gateway keeps in its data directory: the
// saved file, its corrupt copies set aside, and temporary files.
func ownFile(name string) bool {
	if strings.HasPrefix(name, SnapshotFile) {
		return true
	}
	for _, pattern := range tempPatterns(SnapshotFile) {
		if ok, _ := filepath.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// checkWritable creates dir (0700) when missing and makes and removes a file in it, as a save
// would: a location the server cannot be saved to is then known at start.
func checkWritable(dir string) error {
	if err := makeDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".write-check-*.tmp")
	if err != nil {
		return fmt.Errorf("redisstore: cannot write in %s: %w", dir, err)
	}
	_ = f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return fmt.Errorf("redisstore: cannot write in %s: %w", dir, err)
	}
	return nil
}

// makeDir creates dir (0700) with its parents when missing. MkdirAll's mode passes through the
// umask, which can only take permissions away, so a new directory is never more open than 0700.
func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("redisstore: creating %s: %w", dir, err)
	}
	return nil
}

// Path returns the file the server is saved to.
func (s *SavedEmbedded) Path() string { return s.path }

// load restores the keys of the file into the (empty) server.
func (s *SavedEmbedded) load(now time.Time) LoadReport {
	rep := LoadReport{Path: s.path}
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// No file; ENOTDIR: not even its directory, a file is where one should be, which
		// StartSaved then reports as a directory nothing can be saved in.
		return rep
	}
	rep.Found = true
	var snap snapshot
	if err == nil {
		err = decodeSnapshot(raw, &snap)
	}
	if err != nil {
		rep.Problem = err
		rep.SetAside = s.path + ".corrupt-" + now.UTC().Format("20060102T150405.000000000Z")
		if rerr := os.Rename(s.path, rep.SetAside); rerr != nil {
			rep.Problem = errors.Join(err, fmt.Errorf("setting it aside: %w", rerr))
			rep.SetAside = ""
		}
		return rep
	}
	rep.SavedAt = snap.SavedAt
	for _, k := range snap.Keys {
		var ttl time.Duration
		if k.ExpiresAt != nil {
			if ttl = k.ExpiresAt.Sub(now); ttl <= 0 {
				rep.Expired++
				continue
			}
		}
		if !s.restore(k) {
			rep.Skipped++
			continue
		}
		if ttl > 0 {
			s.m.SetTTL(k.Key, ttl)
		}
		rep.Keys++
	}
	return rep
}

// decodeSnapshot parses a saved file, checking its format, version and every key's strings.
func decodeSnapshot(raw []byte, snap *snapshot) error {
	if err := json.Unmarshal(raw, snap); err != nil {
		return fmt.Errorf("not a saved embedded Redis: %w", err)
	}
	if snap.Format != SnapshotFormat {
		return fmt.Errorf("not a saved embedded Redis (format %q, want %q)", snap.Format, SnapshotFormat)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("saved by another version of coachgw (file version %d, this one reads %d)", snap.Version, SnapshotVersion)
	}
	for i := range snap.Keys {
		if err := snap.Keys[i].decodeStrings(); err != nil {
			return fmt.Errorf("key %q: %w", snap.Keys[i].Key, err)
		}
	}
	return nil
}

// restore writes one key into the server; it reports false for a type it does not know.
func (s *SavedEmbedded) restore(k snapshotKey) bool {
	switch k.Type {
	case "string":
		if k.Value == nil {
			return false
		}
		_ = s.m.Set(k.Key, *k.Value)
	case "list":
		_, _ = s.m.Push(k.Key, k.Items...)
	case "hash":
		for f, v := range k.Fields {
			s.m.HSet(k.Key, f, v)
		}
	case "set":
		_, _ = s.m.SetAdd(k.Key, k.Members...)
	case "zset":
		for member, score := range k.Scores {
			_, _ = s.m.ZAdd(k.Key, score, member)
		}
	default:
		return false
	}
	return s.m.Exists(k.Key)
}

// SaveReport says what Save did.
type SaveReport struct {
	// Keys is how many keys the file holds; Unsaved how many keys were left out, having a type
	// that cannot be saved.
	Keys, Unsaved int
	// Unchanged says no command that may change a key has run since the last save, so the
	// file was left as it was and the server not even read: an idle gateway does not rewrite
	// its file every interval.
	Unchanged bool
}

// Save writes every key of the server to the file, atomically: the keys are read in batches
// (see readBatch), written to a temporary file next to the file, synced and renamed over
// it. When nothing was written to the server since the last save, it does nothing.
//
// Requests are served while it runs: the server is held to list the key names once (a sort of
// the names: some 10 ms for 100k keys) and for one batch of saveBatch keys at a time, never for
// the whole save. Each session is saved as one of its commits left it; different sessions are
// read at different instants, which is as consistent as they ever are with each other.
func (s *SavedEmbedded) Save(ctx context.Context) (SaveReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != nil {
		return SaveReport{}, s.refuse
	}
	if s.closed {
		return SaveReport{}, errors.New("redisstore: the embedded Redis is closed")
	}
	// Read before the keys are: a write that lands during the save counts after this, so the
	// next save writes again rather than miss it.
	writes := s.writes.Load()
	if s.saved && writes == s.savedAt {
		return SaveReport{Keys: s.lastKeys, Unchanged: true}, nil
	}
	snap, unsaved, err := s.read(ctx, time.Now())
	if err != nil {
		return SaveReport{}, err
	}
	// Not indented: the file is for the gateway, and indenting 40k sessions costs a save as much
	// CPU as reading them.
	data, err := json.Marshal(snap)
	if err != nil {
		return SaveReport{}, fmt.Errorf("redisstore: encoding the saved state: %w", err)
	}
	if err := writeAtomic(s.path, data); err != nil {
		return SaveReport{}, err
	}
	s.saved, s.savedAt, s.lastKeys = true, writes, len(snap.Keys)
	return SaveReport{Keys: len(snap.Keys), Unsaved: unsaved}, nil
}

// read takes the snapshot of the server: the key names once, then their values by batches of
// whole hash tags.
func (s *SavedEmbedded) read(ctx context.Context, now time.Time) (*snapshot, int, error) {
	snap := &snapshot{Format: SnapshotFormat, Version: SnapshotVersion, SavedAt: now.UTC(), Keys: []snapshotKey{}}
	unsaved := 0
	batch := make([]string, 0, saveBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := s.readBatch(ctx, snap, batch, now)
		if err != nil {
			return fmt.Errorf("redisstore: reading the embedded Redis: %w", err)
		}
		unsaved += n
		batch = batch[:0]
		if s.betweenBatches != nil {
			s.betweenBatches()
		}
		return nil
	}
	for _, group := range byHashTag(s.m.Keys()) {
		if len(batch)+len(group) > saveBatch {
			if err := flush(); err != nil {
				return nil, 0, err
			}
		}
		batch = append(batch, group...)
	}
	if err := flush(); err != nil {
		return nil, 0, err
	}
	sort.Slice(snap.Keys, func(a, b int) bool { return snap.Keys[a].Key < snap.Keys[b].Key })
	return snap, unsaved, nil
}

// byHashTag groups keys by their hash tag (what is between the first { and the next }, as
// Redis Cluster reads it), in the order of each group's first key; a key without a tag is a
// group of its own.
func byHashTag(keys []string) [][]string {
	var groups [][]string
	at := map[string]int{}
	for _, k := range keys {
		tag, ok := hashTag(k)
		if !ok {
			groups = append(groups, []string{k})
			continue
		}
		if i, seen := at[tag]; seen {
			groups[i] = append(groups[i], k)
			continue
		}
		at[tag] = len(groups)
		groups = append(groups, []string{k})
	}
	return groups
}

// hashTag returns the hash tag of key, if it has a non-empty one.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// readBatch adds keys to snap, read in one transaction (MULTI/EXEC, which the server runs
// without serving anything else), and returns how many it left out, having a type that cannot be
// saved. The transaction must name the reading command of each key's type, so the types are
// asked first; a key whose type changed in between (deleted and made anew) has the batch read
// again.
func (s *SavedEmbedded) readBatch(ctx context.Context, snap *snapshot, keys []string, now time.Time) (int, error) {
	for range 3 {
		pipe := s.reader.Pipeline()
		types := make([]*redis.StatusCmd, len(keys))
		for i, k := range keys {
			types[i] = pipe.Type(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
		tx := s.reader.TxPipeline()
		type read struct {
			typ   string
			again *redis.StatusCmd
			pttl  *redis.DurationCmd
			value redis.Cmder
		}
		reads := make([]read, len(keys))
		for i, k := range keys {
			r := read{typ: types[i].Val(), again: tx.Type(ctx, k), pttl: tx.PTTL(ctx, k)}
			switch r.typ {
			case "string":
				r.value = tx.Get(ctx, k)
			case "list":
				r.value = tx.LRange(ctx, k, 0, -1)
			case "hash":
				r.value = tx.HGetAll(ctx, k)
			case "set":
				r.value = tx.SMembers(ctx, k)
			case "zset":
				r.value = tx.ZRangeWithScores(ctx, k, 0, -1)
			}
			reads[i] = r
		}
		if _, err := tx.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		if slices.ContainsFunc(reads, func(r read) bool { return r.again.Val() != r.typ }) {
			continue
		}
		unsaved := 0
		for i, r := range reads {
			if r.typ == "none" || r.typ == "stream" {
				// Gone since it was listed; or a turn's line log (see turnlog.go), kept only
				// minutes for a resume, which a restart ends anyway.
				continue
			}
			k := snapshotKey{Key: keys[i], Type: r.typ}
			if pttl := r.pttl.Val(); pttl > 0 {
				// Rounded up to the second, so that the file does not claim a precision the
				// server's clock (moved every embeddedTick) does not have.
				at := now.Add(pttl).UTC()
				if r := at.Truncate(time.Second); r.Before(at) {
					at = r.Add(time.Second)
				}
				k.ExpiresAt = &at
			}
			switch v := r.value.(type) {
			case *redis.StringCmd:
				val := v.Val()
				k.Value = &val
			case *redis.StringSliceCmd:
				if r.typ == "list" {
					k.Items = v.Val()
				} else {
					k.Members = v.Val()
				}
			case *redis.MapStringStringCmd:
				k.Fields = v.Val()
			case *redis.ZSliceCmd:
				k.Scores = make(map[string]float64, len(v.Val()))
				for _, z := range v.Val() {
					m, _ := z.Member.(string)
					k.Scores[m] = z.Score
				}
			default:
				unsaved++
				continue
			}
			if err := r.value.Err(); err != nil {
				return 0, err
			}
			k.encodeStrings()
			snap.Keys = append(snap.Keys, k)
		}
		return unsaved, nil
	}
	return 0, errors.New("keys kept changing type while they were read")
}

// mapStrings calls f on every string of k but its name, replacing each with f's result.
func (k *snapshotKey) mapStrings(f func(string) (string, error)) error {
	var err error
	apply := func(s string) string {
		out, e := f(s)
		if e != nil && err == nil {
			err = e
		}
		return out
	}
	if k.Value != nil {
		v := apply(*k.Value)
		k.Value = &v
	}
	for i := range k.Items {
		k.Items[i] = apply(k.Items[i])
	}
	for i := range k.Members {
		k.Members[i] = apply(k.Members[i])
	}
	if k.Fields != nil {
		fields := make(map[string]string, len(k.Fields))
		for f, v := range k.Fields {
			fields[apply(f)] = apply(v)
		}
		k.Fields = fields
	}
	if k.Scores != nil {
		scores := make(map[string]float64, len(k.Scores))
		for m, sc := range k.Scores {
			scores[apply(m)] = sc
		}
		k.Scores = scores
	}
	return err
}

// encodeStrings base64-encodes k's strings when any of them is not UTF-8, which JSON cannot
// carry unchanged.
func (k *snapshotKey) encodeStrings() {
	binary := false
	_ = k.mapStrings(func(s string) (string, error) {
		binary = binary || !utf8.ValidString(s)
		return s, nil
	})
	if binary {
		k.Base64 = true
		_ = k.mapStrings(func(s string) (string, error) { return base64.StdEncoding.EncodeToString([]byte(s)), nil })
	}
}

// decodeStrings undoes encodeStrings.
func (k *snapshotKey) decodeStrings() error {
	if !k.Base64 {
		return nil
	}
	return k.mapStrings(func(s string) (string, error) {
		b, err := base64.StdEncoding.DecodeString(s)
		return string(b), err
	})
}

// writeAtomic replaces path with data: a temporary file in the same directory (created 0700 when
// missing) is written, synced and renamed over path, and the directory synced, so that a reader
// or a crash sees either the old file or the new one, never a part.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := makeDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("redisstore: saving the embedded Redis: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("redisstore: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("redisstore: syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("redisstore: writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("redisstore: replacing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename survives a crash once the directory is synced
		_ = d.Close()
	}
	return nil
}

// Close stops the server and closes its client without saving: call Save first to keep what
// changed since the last save. It is safe to call more than once.
func (s *SavedEmbedded) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	_ = s.client.Close()
	_ = s.reader.Close()
	s.m.Close()
}

// changeHook counts, in n, the commands of the embedded server's client that may change a key:
// every command but those known only to read (readOnly). A script counts as a change whatever
// it does; a failed command counts too. Counting too much costs a save that finds nothing new;
// counting too little would lose a change, so the list names only what surely writes nothing.
type changeHook struct{ n *atomic.Int64 }

// readOnly are the commands the gateway sends that change no key.
var readOnly = map[string]bool{
	"get": true, "mget": true, "getrange": true, "strlen": true, "exists": true, "type": true,
	"ttl": true, "pttl": true, "scan": true, "hget": true, "hmget": true, "hgetall": true,
	"hexists": true, "hlen": true, "hkeys": true, "hvals": true, "lrange": true, "llen": true,
	"lindex": true, "smembers": true, "sismember": true, "scard": true, "zrange": true,
	"zrangebyscore": true, "zscore": true, "zcard": true, "ping": true, "echo": true, "time": true,
	"info": true, "dbsize": true, "hello": true, "client": true, "select": true, "auth": true,
	"evalsha_ro": true, "eval_ro": true,
}

// counts reports whether cmd may change a key. SCRIPT LOAD (which a script's first run may
// send) stores a script, not a key.
func (h changeHook) counts(cmd redis.Cmder) bool {
	name := cmd.Name()
	if name == "script" {
		return false
	}
	return !readOnly[name]
}

// DialHook leaves dialling alone.
func (h changeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts a command that may change a key, once it has run.
func (h changeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.counts(cmd) {
			h.n.Add(1)
		}
		return err
	}
}

// ProcessPipelineHook counts a pipeline (or transaction) with any command that may change a key.
func (h changeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if h.counts(cmd) {
				h.n.Add(1)
				break
			}
		}
		return err
	}
}
