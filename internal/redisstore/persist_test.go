package redisstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

// startSaved starts a saved embedded Redis at path, failing t on an error, and closes it when t
// ends.
func startSaved(t *testing.T, path string) (*SavedEmbedded, redis.UniversalClient, LoadReport) {
	t.Helper()
	s, c, rep, err := StartSaved(path)
	if err != nil {
		t.Fatalf("StartSaved: %v", err)
	}
	t.Cleanup(s.Close)
	return s, c, rep
}

// fillEveryType writes one key of every type the gateway uses or may use, and a session with a
// transcript through the Store, and returns the session.
func fillEveryType(t *testing.T, c redis.UniversalClient) *coach.Session {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, "str", "plain ✓", 10*time.Minute).Err())
	must(c.Set(ctx, "bin", "\xff\x00not utf-8", 0).Err())
	must(c.RPush(ctx, "list", "a", "b", "a", "").Err())
	must(c.HSet(ctx, "hash", "seq", "7", "bytes", "120", "\xfe", "binary field").Err())
	must(c.SAdd(ctx, "set", "x", "y").Err())
	must(c.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: -2, Member: "m2"}).Err())
	must(c.Expire(ctx, "zset", time.Hour).Err())

	store := New(c, Options{TTL: time.Hour})
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := &coach.Session{ID: coach.NewID(), Contract: "toulmin", Locale: "es", Version: 1, State: json.RawMessage(`{"step":"claim"}`),
		CreatedAt: now, UpdatedAt: now, Tenant: "acme", History: []coach.Message{{Role: coach.RoleUser, Content: "hola"}}}
	must(store.Create(ctx, s))
	claimed, token, err := store.Claim(ctx, "acme", s.ID, time.Minute)
	must(err)
	next := *claimed
	next.Version++
	next.State = json.RawMessage(`{"step":"grounds"}`)
	entries := []coach.TranscriptEntry{
		{At: now, Role: coach.TranscriptLearner, Input: json.RawMessage(`{"message":"hola"}`)},
		{At: now, Role: coach.TranscriptCoach, Result: json.RawMessage(`{"assistantText":"¿Por qué?"}`)},
	}
	must(store.Commit(ctx, &next, token, coach.CommitExtra{Transcript: entries}))
	return &next
}

func TestSavedRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", SnapshotFile)
	s, c, rep := startSaved(t, path)
	if rep.Found || rep.Problem != nil || rep.Keys != 0 {
		t.Fatalf("first start: report %+v, want nothing found", rep)
	}
	sess := fillEveryType(t, c)
	ctx := context.Background()
	// A turn's line log (a stream) is left out on purpose, not reported as unsavable: it lives
	// minutes, for a resume that a restart ends anyway.
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "turnlog", Values: []string{"l", "{}"}}).Err(); err != nil {
		t.Fatal(err)
	}
	first, err := s.Save(ctx)
	saved := first.Keys
	if err != nil || first.Unsaved != 0 || first.Unchanged {
		t.Fatalf("Save = %+v, %v", first, err)
	}
	if want := 6 + 3; saved != want { // six plain keys; the session's document, transcript and counters
		t.Errorf("saved %d keys, want %d", saved, want)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("saved file: %v, mode %v; want 0600", err, st.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	s.Close()

	_, c2, rep := startSaved(t, path)
	if !rep.Found || rep.Problem != nil || rep.Keys != saved || rep.Expired != 0 || rep.Skipped != 0 {
		t.Fatalf("second start: report %+v, want %d keys loaded", rep, saved)
	}
	if got := c2.Get(ctx, "str").Val(); got != "plain ✓" {
		t.Errorf("str = %q", got)
	}
	// Saved expiry times are rounded up to the second.
	if ttl := c2.PTTL(ctx, "str").Val(); ttl < 9*time.Minute || ttl > 10*time.Minute+time.Second {
		t.Errorf("str PTTL = %v, want about 10m", ttl)
	}
	if got := c2.Get(ctx, "bin").Val(); got != "\xff\x00not utf-8" {
		t.Errorf("bin = %q", got)
	}
	if ttl := c2.PTTL(ctx, "bin").Val(); ttl != -1 {
		t.Errorf("bin PTTL = %v, want none (-1)", ttl)
	}
	if got := c2.LRange(ctx, "list", 0, -1).Val(); !slices.Equal(got, []string{"a", "b", "a", ""}) {
		t.Errorf("list = %q", got)
	}
	if got := c2.HGetAll(ctx, "hash").Val(); len(got) != 3 || got["seq"] != "7" || got["\xfe"] != "binary field" {
		t.Errorf("hash = %q", got)
	}
	members := c2.SMembers(ctx, "set").Val()
	slices.Sort(members)
	if !slices.Equal(members, []string{"x", "y"}) {
		t.Errorf("set = %q", members)
	}
	if got := c2.ZRangeWithScores(ctx, "zset", 0, -1).Val(); len(got) != 2 || got[0].Member != "m2" || got[0].Score != -2 || got[1].Score != 1.5 {
		t.Errorf("zset = %+v", got)
	}
	if ttl := c2.PTTL(ctx, "zset").Val(); ttl < 59*time.Minute || ttl > time.Hour+time.Second {
		t.Errorf("zset PTTL = %v, want about 1h", ttl)
	}

	// The session, its transcript and its counters came back: a new commit numbers on.
	store := New(c2, Options{TTL: time.Hour})
	got, err := store.Get(ctx, "acme", sess.ID)
	if err != nil || got.Version != sess.Version || string(got.State) != string(sess.State) || got.Locale != "es" || len(got.History) != 1 {
		t.Fatalf("session after the restart = %+v, %v; want version %d", got, err, sess.Version)
	}
	claimed, token, err := store.Claim(ctx, "acme", sess.ID, time.Minute)
	if err != nil {
		t.Fatalf("Claim after the restart: %v", err)
	}
	claimed.Version++
	if err := store.Commit(ctx, claimed, token, coach.CommitExtra{Transcript: []coach.TranscriptEntry{{Role: coach.TranscriptLearner, Input: json.RawMessage(`{"continue":true}`)}}}); err != nil {
		t.Fatalf("Commit after the restart: %v", err)
	}
	page, err := store.Transcript(ctx, "acme", sess.ID, 0, 10)
	if err != nil || len(page.Entries) != 3 || page.Entries[0].Seq != 1 || page.Entries[2].Seq != 3 ||
		!strings.Contains(string(page.Entries[1].Result), "¿Por qué?") {
		t.Errorf("transcript after the restart = %+v, %v; want seqs 1..3 with the saved entries first", page, err)
	}
}

// TestSaveSkipsAnUnchangedServer checks that an idle gateway does not rewrite its file: a save
// whose keys are those of the last one leaves the file alone, and a change is written.
func TestSaveSkipsAnUnchangedServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	s, c, _ := startSaved(t, path)
	ctx := context.Background()
	fillEveryType(t, c)
	if rep, err := s.Save(ctx); err != nil || rep.Unchanged {
		t.Fatalf("first Save = %+v, %v; want it written", rep, err)
	}
	if err := os.WriteFile(path, []byte("marker"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * embeddedTick) // the TTLs move on; their saved expiry times must not
	if rep, err := s.Save(ctx); err != nil || !rep.Unchanged {
		t.Errorf("Save of an unchanged server = %+v, %v; want Unchanged", rep, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "marker" {
		t.Errorf("an unchanged save rewrote the file")
	}
	if err := c.Set(ctx, "new", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Save(ctx); err != nil || rep.Unchanged {
		t.Errorf("Save after a change = %+v, %v; want it written", rep, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"new"`) {
		t.Errorf("the change was not written")
	}
}

// TestSavedKeysExpireWhileStopped checks that expiry times are absolute: a key whose time
// passed while the gateway was stopped is not loaded.
func TestSavedKeysExpireWhileStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	s, c, _ := startSaved(t, path)
	fillEveryType(t, c)
	rep, err := s.Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	saved := rep.Keys
	s.Close()

	m, c2, err := startEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	later := &SavedEmbedded{m: m, client: c2, reader: redis.NewClient(&redis.Options{Addr: m.Addr()}), path: path}
	t.Cleanup(later.Close)
	// Two hours later: the keys with a TTL (at most an hour) have expired; bin, list, hash and
	// set have none.
	loaded := later.load(time.Now().Add(2 * time.Hour))
	if loaded.Keys != 4 || loaded.Expired != saved-4 {
		t.Errorf("report %+v, want 4 keys loaded and %d expired", loaded, saved-4)
	}
	if n := c2.Exists(context.Background(), "str", "zset").Val(); n != 0 {
		t.Errorf("%d expired keys loaded", n)
	}
}

// TestSavedCorruptFileSetAside checks that a file that cannot be used is reported, renamed
// next to the file with its content unchanged, and that the server starts empty and saves anew.
func TestSavedCorruptFileSetAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		problem string
	}{
		{"garbage", "\x00\x01 not json", "not a saved embedded Redis"},
		{"empty", "", "not a saved embedded Redis"},
		{"cut short", `{"format":"coachgw-embedded-redis","version":1,"keys":[{"key":"a","ty`, "not a saved embedded Redis"},
		{"another format", `{"format":"something-else","version":1,"keys":[]}`, "format"},
		{"a newer version", `{"format":"coachgw-embedded-redis","version":99,"keys":[]}`, "version 99"},
		{"bad base64", `{"format":"coachgw-embedded-redis","version":1,"keys":[{"key":"a","type":"string","base64":true,"value":"%%%"}]}`, `key "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), SnapshotFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s, c, rep := startSaved(t, path)
			if rep.Problem == nil || !strings.Contains(rep.Problem.Error(), tt.problem) || rep.Keys != 0 {
				t.Fatalf("report %+v, want a problem mentioning %q", rep, tt.problem)
			}
			kept, err := os.ReadFile(rep.SetAside)
			if err != nil || string(kept) != tt.content || !strings.HasPrefix(filepath.Base(rep.SetAside), SnapshotFile+".corrupt-") {
				t.Errorf("set aside as %q: %v, content %q; want the file's content unchanged", rep.SetAside, err, kept)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the corrupt file is still at %s: %v", path, err)
			}
			if n := c.DBSize(context.Background()).Val(); n != 0 {
				t.Errorf("%d keys after a corrupt file, want none", n)
			}
			if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if rep, err := s.Save(context.Background()); err != nil || rep.Keys != 1 {
				t.Errorf("Save after setting the file aside = %+v, %v; want 1 key saved", rep, err)
			}
		})
	}
	t.Run("a directory in the way", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), SnapshotFile)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		_, _, rep := startSaved(t, path)
		if rep.Problem == nil || rep.SetAside == "" {
			t.Fatalf("report %+v, want the directory set aside", rep)
		}
		if st, err := os.Stat(rep.SetAside); err != nil || !st.IsDir() {
			t.Errorf("set aside: %v", err)
		}
	})
}

// TestSavedDirectoryCheckedAtStart checks that StartSaved creates a missing directory and
// reports at once a location nothing can be saved in, rather than at the first save.
func TestSavedDirectoryCheckedAtStart(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fresh", "cache", "coachgw")
		_, _, rep := startSaved(t, filepath.Join(dir, SnapshotFile))
		if rep.Unwritable != nil || rep.Problem != nil || rep.Found {
			t.Fatalf("report %+v, want a clean start", rep)
		}
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Fatalf("directory after the start: %v, %v; want it created with mode 0700", st, err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("the check left %v behind", left)
		}
	})
	t.Run("cannot be created", func(t *testing.T) {
		// A regular file where a parent directory should be: nothing can be made under it, even
		// by root.
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s, _, rep := startSaved(t, filepath.Join(file, "coachgw", SnapshotFile))
		if rep.Unwritable == nil {
			t.Fatalf("report %+v, want the directory reported as unwritable", rep)
		}
		if _, err := s.Save(context.Background()); err == nil {
			t.Error("Save succeeded where the start found nothing can be written")
		}
	})
	t.Run("a file that can be neither read nor set aside", func(t *testing.T) {
		// /proc/self/cmdline reads as no saved file and cannot be renamed, even by root.
		const path = "/proc/self/cmdline"
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no %s here: %v", path, err)
		}
		s, _, rep := startSaved(t, path)
		if rep.Problem == nil || rep.SetAside != "" || rep.Unwritable == nil {
			t.Fatalf("report %+v, want the file left in place and this run's saves reported impossible", rep)
		}
		if _, err := s.Save(context.Background()); err == nil {
			t.Error("Save overwrote a file that could not be read nor set aside")
		}
	})
}

func TestSavedClose(t *testing.T) {
	s, c, _ := startSaved(t, filepath.Join(t.TempDir(), SnapshotFile))
	s.Close()
	s.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Error("Ping after Close succeeded")
	}
	if _, err := s.Save(context.Background()); err == nil {
		t.Error("Save after Close succeeded")
	}
}

// FuzzDecodeSnapshot feeds arbitrary files to the loader: it must never panic, and what it
// accepts must restore into a server.
func FuzzDecodeSnapshot(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzDecodeSnapshot")
	m, c, err := startEmbedded()
	if err != nil {
		f.Fatal(err)
	}
	defer m.Close()
	defer c.Close()
	f.Fuzz(func(t *testing.T, raw []byte) {
		var snap snapshot
		if decodeSnapshot(raw, &snap) != nil {
			return
		}
		s := &SavedEmbedded{m: m, client: c}
		for _, k := range snap.Keys {
			s.restore(k)
		}
		m.FlushAll()
	})
}

// BenchmarkSave measures one save of an embedded Redis holding 1000 sessions, each with a
// 20-entry transcript: what the periodic save costs a gateway of that size.
func BenchmarkSave(b *testing.B) {
	s, c, _, err := StartSaved(filepath.Join(b.TempDir(), SnapshotFile))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	store := New(c, Options{TTL: time.Hour})
	result := json.RawMessage(`{"assistantText":"` + strings.Repeat("Good start. ", 20) + `","step":"claim","confidence":0.5}`)
	for range 1000 {
		now := time.Now().UTC()
		sess := &coach.Session{ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1, State: json.RawMessage(`{"step":"claim"}`), CreatedAt: now, UpdatedAt: now}
		if err := store.Create(ctx, sess); err != nil {
			b.Fatal(err)
		}
		for range 10 {
			claimed, token, err := store.Claim(ctx, "", sess.ID, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			claimed.Version++
			claimed.History = append(claimed.History, coach.Message{Role: coach.RoleUser, Content: "Cities should ban cars."}, coach.Message{Role: coach.RoleAssistant, Content: string(result)})
			extra := coach.CommitExtra{Transcript: []coach.TranscriptEntry{
				{At: now, Role: coach.TranscriptLearner, Input: json.RawMessage(`{"message":"Cities should ban cars."}`)},
				{At: now, Role: coach.TranscriptCoach, Result: result},
			}}
			if err := store.Commit(ctx, claimed, token, extra); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Save(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if st, err := os.Stat(s.Path()); err == nil {
		b.ReportMetric(float64(st.Size())/(1<<20), "MiB/file")
	}
}

// BenchmarkEmbeddedTurnWithManySessions measures a turn's two round trips (Claim and Commit with
// two transcript entries) on the embedded server holding 1000 other sessions (3000 keys): the
// cost of a command there grows with the number of keys the server must check for expiry.
func BenchmarkEmbeddedTurnWithManySessions(b *testing.B) {
	client, stop, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	store := New(client, Options{TTL: time.Hour})
	newSession := func() *coach.Session {
		now := time.Now().UTC()
		s := &coach.Session{ID: coach.NewID(), Contract: "toulmin", Version: 1, State: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
		if err := store.Create(ctx, s); err != nil {
			b.Fatal(err)
		}
		return s
	}
	turn := func(id string) {
		claimed, token, err := store.Claim(ctx, "", id, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		claimed.Version++
		entry := coach.TranscriptEntry{Role: coach.TranscriptLearner, Input: json.RawMessage(`{"message":"hi"}`)}
		if err := store.Commit(ctx, claimed, token, coach.CommitExtra{Transcript: []coach.TranscriptEntry{entry, entry}}); err != nil {
			b.Fatal(err)
		}
	}
	for range 1000 {
		turn(newSession().ID)
	}
	s := newSession()
	b.ResetTimer()
	for b.Loop() {
		turn(s.ID)
	}
}
