package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// createSessions stores n sessions through store and returns their ids.
func createSessions(tb testing.TB, store *Store, n int) []string {
	tb.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	now := time.Now().UTC()
	for i := range ids {
		s := &coach.Session{ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
			State: json.RawMessage(`{"step":"claim"}`), CreatedAt: now, UpdatedAt: now,
			History: []coach.Message{{Role: coach.RoleUser, Content: "Cities should ban cars."}}}
		if err := store.Create(ctx, s); err != nil {
			tb.Fatal(err)
		}
		ids[i] = s.ID
	}
	return ids
}

// TestSaveOfAnUnchangedServerReadsNothing checks that a save with no write since the last one
// sends the server no command at all: it neither lists the keys nor compares them, so an idle
// gateway's periodic save costs nothing whatever the number of keys, and TTLs that move on
// (every embeddedTick) do not make it a rewrite.
func TestSaveOfAnUnchangedServerReadsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	s, c, _ := startSaved(t, path)
	ctx := context.Background()
	store := New(c, Options{TTL: time.Hour})
	ids := createSessions(t, store, 50)
	if rep, err := s.Save(ctx); err != nil || rep.Unchanged || rep.Keys != 50 {
		t.Fatalf("first Save = %+v, %v; want 50 keys written", rep, err)
	}
	for i := range 3 {
		// Reads change nothing: the gateway's GET session and the transcript's reads.
		if _, err := store.Get(ctx, "", ids[i]); err != nil {
			t.Fatal(err)
		}
		s.m.FastForward(1500 * time.Millisecond) // past a second: every rounded TTL moves
		before := s.m.CommandCount()
		rep, err := s.Save(ctx)
		if err != nil || !rep.Unchanged || rep.Keys != 50 {
			t.Errorf("save %d of an unchanged server = %+v, %v; want Unchanged with 50 keys", i, rep, err)
		}
		if got := s.m.CommandCount() - before; got != 0 {
			t.Errorf("save %d of an unchanged server sent %d commands, want 0", i, got)
		}
	}
	if err := store.Delete(ctx, "", ids[0]); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Save(ctx); err != nil || rep.Unchanged || rep.Keys != 49 {
		t.Errorf("Save after a delete = %+v, %v; want 49 keys written", rep, err)
	}
}

// TestSaveLetsRequestsThrough checks that a save does not hold the server for its whole run: it
// is stopped between two of its batches, and a read and a write of other sessions complete
// meanwhile. The write, landing during the save, is saved by the next one.
func TestSaveLetsRequestsThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	s, c, _ := startSaved(t, path)
	ctx := context.Background()
	store := New(c, Options{TTL: time.Hour})
	ids := createSessions(t, store, 3*saveBatch)

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	batches := 0
	s.betweenBatches = func() {
		batches++
		once.Do(func() { close(paused); <-resume })
	}
	type result struct {
		rep SaveReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := s.Save(ctx)
		done <- result{rep, err}
	}()
	<-paused
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := store.Get(rctx, "", ids[len(ids)-1]); err != nil {
		t.Errorf("Get during a save: %v", err)
	}
	late := createSessions(t, store, 1)[0]
	close(resume)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if batches < 3 {
		t.Errorf("%d keys read in %d batches, want at least 3 (of at most %d keys)", len(ids), batches, saveBatch)
	}
	s.betweenBatches = nil
	rep, err := s.Save(ctx)
	if err != nil || rep.Unchanged || rep.Keys != len(ids)+1 {
		t.Errorf("Save after a write during the last one = %+v, %v; want %d keys written", rep, err, len(ids)+1)
	}
	raw, _ := os.ReadFile(path)
	var snap snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(snap.Keys, func(k snapshotKey) bool { return k.Key == store.docKey(late) }) {
		t.Errorf("the session created during a save is not in the next save")
	}
}

// TestByHashTag checks that the keys of one hash tag share a group, so that a batch never
// splits a session between two instants.
func TestByHashTag(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want [][]string
	}{
		{"none", nil, nil},
		{"untagged keys alone", []string{"a", "b"}, [][]string{{"a"}, {"b"}}},
		{"a session's keys together", []string{"p:{1}:s", "p:{2}:s", "p:{1}:t", "x", "p:{1}:tm"},
			[][]string{{"p:{1}:s", "p:{1}:t", "p:{1}:tm"}, {"p:{2}:s"}, {"x"}}},
		{"an empty tag is no tag", []string{"p:{}:a", "p:{}:b"}, [][]string{{"p:{}:a"}, {"p:{}:b"}}},
		{"an unclosed brace is no tag", []string{"p:{1", "p:{1"}, [][]string{{"p:{1"}, {"p:{1"}}},
		{"the first tag counts", []string{"p:{rl:acme}", "q:{rl:acme}:{x}"}, [][]string{{"p:{rl:acme}", "q:{rl:acme}:{x}"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := byHashTag(tt.keys); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("byHashTag(%q) = %q, want %q", tt.keys, got, tt.want)
			}
		})
	}
}

// TestStaleTempsRemovedAtStart checks that the temporary files of a save killed midway (they
// hold learners' text) are removed at start, and nothing else is.
func TestStaleTempsRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	stale := []string{"." + SnapshotFile + ".123456.tmp", ".write-check-99.tmp"}
	kept := []string{SnapshotFile + ".corrupt-20250101T000000.000000000Z"}
	for _, name := range append(slices.Clone(stale), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"message":"learner text"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, _, rep := startSaved(t, filepath.Join(dir, SnapshotFile))
	if rep.StaleTemps != len(stale) {
		t.Errorf("StaleTemps = %d, want %d", rep.StaleTemps, len(stale))
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	if !slices.Equal(left, kept) {
		t.Errorf("left in the directory: %q, want %q", left, kept)
	}
}

// TestDataDirTightened checks that a data directory open to others is set to 0700 at start,
// unless it is shared (sticky) or holds other programs' files, which are reported instead.
func TestDataDirTightened(t *testing.T) {
	tests := []struct {
		name      string
		mode      os.FileMode
		foreign   bool
		wantMode  os.FileMode
		wantWas   os.FileMode
		wantLoose bool
	}{
		{name: "0777 is tightened", mode: 0o777, wantMode: 0o700, wantWas: 0o777},
		{name: "0755 is tightened", mode: 0o755, wantMode: 0o700, wantWas: 0o755},
		{name: "0700 is left alone", mode: 0o700, wantMode: 0o700},
		{name: "a shared directory is reported", mode: 0o777 | os.ModeSticky, wantMode: 0o777, wantLoose: true},
		{name: "a directory of other files is reported", mode: 0o777, foreign: true, wantMode: 0o777, wantLoose: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil { // Mkdir's mode passes through the umask
				t.Fatal(err)
			}
			if tt.foreign {
				if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, _, rep := startSaved(t, filepath.Join(dir, SnapshotFile))
			st, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != tt.wantMode {
				t.Errorf("mode after the start = %v, want %v", got, tt.wantMode)
			}
			if rep.Tightened != tt.wantWas || (rep.Loose != nil) != tt.wantLoose {
				t.Errorf("report Tightened=%v Loose=%v, want Tightened=%v and a reason: %v", rep.Tightened, rep.Loose, tt.wantWas, tt.wantLoose)
			}
		})
	}
}

// BenchmarkGetDuringSave measures GET session among benchSessions sessions, alone ("idle") and
// while the embedded server is saved over and over, each save made necessary by a write
// ("saving"): the p99 and the worst latency of a read are reported, and the time of a save.
// Run it with
//
//	go test -run '^$' -bench BenchmarkGetDuringSave -benchtime 2000x ./internal/redisstore
func BenchmarkGetDuringSave(b *testing.B) {
	s, c, _, err := StartSaved(filepath.Join(b.TempDir(), SnapshotFile))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	store := New(c, Options{TTL: time.Hour})
	ids := createSessions(b, store, benchSessions)
	for _, saving := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "saving"}[saving]
		b.Run(name, func(b *testing.B) {
			stop, saved := make(chan struct{}), make(chan struct{})
			var saves int
			var saveTime time.Duration
			go func() {
				defer close(saved)
				for saving {
					select {
					case <-stop:
						return
					default:
					}
					_ = c.Set(ctx, "dirty", time.Now().String(), 0).Err()
					start := time.Now()
					if _, err := s.Save(ctx); err != nil {
						b.Error(err)
						return
					}
					saves++
					saveTime += time.Since(start)
				}
			}()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := store.Get(ctx, "", ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				time.Sleep(time.Millisecond) // a client's pace, so that the reads span several saves
			}
			b.StopTimer()
			close(stop)
			<-saved
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
			if saves > 0 {
				b.ReportMetric(float64(saves), "saves")
				b.ReportMetric(saveTime.Seconds()/float64(saves), "s/save")
			}
		})
	}
}

// benchSessions is how many sessions BenchmarkGetDuringSave holds: the 40k.
const benchSessions = 40_000
