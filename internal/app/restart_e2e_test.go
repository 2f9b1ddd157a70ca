package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/pkg/coachclient"
)

// TestEmbeddedRedisSurvivesARestart runs the default gateway (no REDIS_URL, the embedded replay
// model), takes turns, stops it, and starts another on the same COACH_DATA_DIR: the session,
// its state and its transcript are still there, and the next turn goes on from them.
func TestEmbeddedRedisSurvivesARestart(t *testing.T) {
	dataDir := t.TempDir()
	embedded := func(c *config.Config) {
		c.RedisURL, c.DataDir = "", dataDir
		c.OpenAIBaseURL = "" // the embedded replay model
		c.ReplayDelayMin, c.ReplayDelayMax = 0, time.Millisecond
	}
	ctx := context.Background()
	// Both gateways use the same key prefix, as two runs of the binary do.
	start := func() *apptest.Gateway {
		return apptest.StartWith(t, apptest.Options{Config: embedded, Prefix: "coachgw"})
	}
	g := start()
	if !strings.Contains(g.Log.String(), "saved to "+filepath.Join(dataDir, redisstore.SnapshotFile)) {
		t.Errorf("the start log does not say where the embedded Redis is saved:\n%s", g.Log.String())
	}
	s := g.Create("toulmin", nil)
	for _, msg := range []string{"I think cars are a problem in cities.", "Cities should ban private cars from their centres to cut air pollution."} {
		if tr := g.Turn(s.ID, apptest.Msg(msg)); tr.Last().Type != "result" {
			t.Fatalf("turn %q: %s", msg, tr.Kinds())
		}
	}
	before := g.Get(s.ID)
	transcript, err := coachclient.New(g.URL).Transcript(ctx, s.ID, 3)
	if err != nil || len(transcript) != 4 {
		t.Fatalf("transcript before the restart: %d entries, %v; want 4", len(transcript), err)
	}
	g.Stop()

	g2 := start()
	if !strings.Contains(g2.Log.String(), "loaded the saved embedded Redis") {
		t.Errorf("the second start does not report the loaded file:\n%s", g2.Log.String())
	}
	after := g2.Get(s.ID)
	if after.Version != before.Version || string(after.State) != string(before.State) {
		t.Errorf("session after the restart = version %d %s, want version %d %s", after.Version, after.State, before.Version, before.State)
	}
	again, err := coachclient.New(g2.URL).Transcript(ctx, s.ID, 3)
	if err != nil || len(again) != len(transcript) {
		t.Fatalf("transcript after the restart: %d entries, %v; want %d", len(again), err, len(transcript))
	}
	for i := range again {
		if again[i].Seq != transcript[i].Seq || string(again[i].Input) != string(transcript[i].Input) || string(again[i].Result) != string(transcript[i].Result) {
			t.Errorf("entry %d after the restart = %+v, want %+v", i, again[i], transcript[i])
		}
	}
	if code := g2.Call("POST", "/v1/sessions/"+s.ID+"/proposal", map[string]string{"action": "accept"}, nil); code != http.StatusOK {
		t.Errorf("accepting the proposal made before the restart: status %d", code)
	}
}

// TestEmbeddedRedisCorruptFile starts the default gateway on a data directory whose saved file
// is damaged: the gateway starts (empty), says so at error level, and keeps the damaged file
// under another name.
func TestEmbeddedRedisCorruptFile(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, redisstore.SnapshotFile)
	if err := os.WriteFile(path, []byte(`{"format":"coachgw-embedded-redis","version":1,"keys":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := apptest.Start(t, func(c *config.Config) { c.RedisURL, c.DataDir = "", dataDir })
	if !strings.Contains(g.Log.String(), `"level":"error"`) || !strings.Contains(g.Log.String(), "set_aside") {
		t.Errorf("no error-level report of the damaged file:\n%s", g.Log.String())
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("set-aside files %v, want one", aside)
	}
	if s := g.Create("cards", nil); s.ID == "" {
		t.Error("the gateway does not serve after a damaged file")
	}
}

// TestEmbeddedRedisUnwritableDataDir starts the default gateway on a data directory that cannot
// be made (a file is in the way): the gateway starts and serves, and its start log says at error
// level, instead of promising saves, that the sessions cannot be saved there.
func TestEmbeddedRedisUnwritableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(file, "coachgw")
	g := apptest.Start(t, func(c *config.Config) { c.RedisURL, c.DataDir = "", dataDir })
	var start []string
	for _, l := range strings.Split(g.Log.String(), "\n") {
		if strings.Contains(l, `"message":"listening"`) {
			break
		}
		start = append(start, l)
	}
	log := strings.Join(start, "\n")
	path := filepath.Join(dataDir, redisstore.SnapshotFile)
	if !strings.Contains(log, `"level":"error"`) || !strings.Contains(log, "cannot be saved to "+path) {
		t.Errorf("the start log does not say at error level that nothing can be saved to %s:\n%s", path, log)
	}
	if strings.Contains(log, "saved to "+path+" every") {
		t.Errorf("the start log promises saves that cannot happen:\n%s", log)
	}
	if s := g.Create("toulmin", nil); s.ID == "" {
		t.Error("the gateway does not serve")
	}
}
