package qualify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
	"github.com/coachgw/coachgw/internal/replay"
)

// env returns a getenv of a fast replay model (and embedded Redis) with extra on top.
func env(extra map[string]string) func(string) string {
	all := map[string]string{"COACH_REPLAY_DELAY_MIN": "0s", "COACH_REPLAY_DELAY_MAX": "1ms"}
	for k, v := range extra {
		all[k] = v
	}
	return func(k string) string { return all[k] }
}

// qualify runs Main with --json and returns its report and error.
func qualify(t *testing.T, getenv func(string) string, args ...string) (*Report, error) {
	t.Helper()
	var out bytes.Buffer
	err := Main(context.Background(), append(args, "--json"), getenv, &out)
	var rep Report
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("the output is not a JSON report (%v; Main said %v):\n%s", jerr, err, out.String())
	}
	return &rep, err
}

// TestReplayQualifies drives every contract in both locales against the embedded replay model:
// every turn is a result the model wrote, and the bar of 1.0 is met.
func TestReplayQualifies(t *testing.T) {
	rep, err := qualify(t, env(nil), "--sessions", "1", "--turns", "5", "--min-success", "1")
	if err != nil {
		t.Fatalf("Main = %v, want nil", err)
	}
	if len(rep.Endpoints) != 1 || rep.Endpoints[0].Name != "replay" {
		t.Fatalf("endpoints = %+v, want the one replay model", rep.Endpoints)
	}
	rows := rep.Endpoints[0].Rows
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want one per contract", len(rows))
	}
	for _, r := range rows {
		t.Run(r.Contract, func(t *testing.T) {
			if r.Turns != 10 || r.OK != 10 || r.Success != 1 {
				t.Errorf("turns/ok/success = %d/%d/%v, want 10/10/1 (2 locales × 5 turns)", r.Turns, r.OK, r.Success)
			}
			if r.Fallbacks+r.Empty+r.Errors+r.Corrective+r.Retries+r.Resets != 0 {
				t.Errorf("row %+v, want no fallback, empty answer, error, retry or reset", r)
			}
			if r.TurnTime.N != 10 || r.FirstDelta.N != 10 || r.TurnTime.P50 <= 0 || r.TurnTime.P95 < r.TurnTime.P50 {
				t.Errorf("timings first delta %+v, turn %+v, want 10 samples each, p95 >= p50 > 0", r.FirstDelta, r.TurnTime)
			}
			if r.Tokens != nil {
				t.Errorf("tokens = %+v, want none: the replay model reports no usage", r.Tokens)
			}
		})
	}
	// The toulmin learners' statements and questions get a nextQuestion, which the guards append.
	if rows[0].Contract != "toulmin" || rows[0].Rules["question_appending"] == 0 || rows[0].Guards != rows[0].Rules["question_appending"] {
		t.Errorf("toulmin guard firings %d %v, want the question_appending firings counted", rows[0].Guards, rows[0].Rules)
	}
}

// TestFaultModes judges a good endpoint and a faulty one in the same run: each is judged alone
// (the faulty one's turns never reach the good one), the faulty one's rows count what the
// learners saw and what the engine did, and the run ends below the bar.
func TestFaultModes(t *testing.T) {
	good := startLLM(t, fakellm.Options{Responder: replay.Responder()})
	const turns = 4 // 2 locales × 2 turns
	tests := []struct {
		name  string
		reply fakellm.Reply
		check func(t *testing.T, r Row)
	}{
		{name: "prose instead of JSON", reply: fakellm.Reply{Content: "Sure! Here is some friendly advice, in plain words."},
			check: func(t *testing.T, r Row) {
				// Toulmin and cards give every turn one corrective retry, then fail or fall back
				// to the card; module shows prose as it is, as the markdown fallback.
				wantCorrective := turns
				if r.Contract == "module" {
					wantCorrective = 0
				}
				if r.Corrective != wantCorrective || r.Retries != 0 {
					t.Errorf("corrective/retries = %d/%d, want %d/0", r.Corrective, r.Retries, wantCorrective)
				}
				switch r.Contract {
				case "toulmin":
					if r.Errors != turns || r.ErrorCodes["coach_validation_failed"] != turns {
						t.Errorf("errors %d %v, want %d coach_validation_failed", r.Errors, r.ErrorCodes, turns)
					}
				default:
					if r.Fallbacks != turns {
						t.Errorf("fallbacks = %d, want %d", r.Fallbacks, turns)
					}
				}
			}},
		{name: "500", reply: fakellm.Reply{Fault: fakellm.Fault{Status: 500}},
			check: func(t *testing.T, r Row) {
				// COACH_MAX_ATTEMPTS=2: one retry per turn, then the turn fails.
				if r.Errors != turns || r.ErrorCodes["coach_stream_failed"] != turns || r.Retries != turns || r.Corrective != 0 {
					t.Errorf("errors %d %v, retries %d, corrective %d; want %d coach_stream_failed, %d retries, none corrective",
						r.Errors, r.ErrorCodes, r.Retries, r.Corrective, turns, turns)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := startLLM(t, fakellm.Options{Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply { return tt.reply })})
			ups, _ := json.Marshal([]map[string]string{
				{"name": "good", "baseURL": good, "profile": "openai", "model": "m"},
				{"name": "bad", "baseURL": bad, "profile": "openai", "model": "m"},
			})
			getenv := env(map[string]string{"COACH_UPSTREAMS": string(ups), "COACH_MAX_ATTEMPTS": "2", "COACH_BREAKER_FAILURES": "1000"})
			rep, err := qualify(t, getenv, "--sessions", "1", "--turns", "2", "--min-success", "0.95")
			if !errors.Is(err, ErrBelowBar) {
				t.Fatalf("Main = %v, want ErrBelowBar", err)
			}
			if len(rep.Endpoints) != 2 {
				t.Fatalf("endpoints = %d, want good and bad", len(rep.Endpoints))
			}
			for _, r := range rep.Endpoints[0].Rows {
				if r.Endpoint != "good" || r.Success != 1 || r.Tokens == nil || r.Tokens.Prompt == 0 {
					t.Errorf("good endpoint row %+v, want success 1 with the tokens it reported", r)
				}
				if strings.Contains(err.Error(), r.Contract+" on good") {
					t.Errorf("the error %q names the good endpoint", err)
				}
			}
			for _, r := range rep.Endpoints[1].Rows {
				t.Run(r.Contract, func(t *testing.T) {
					if r.Endpoint != "bad" || r.Turns != turns || r.OK != 0 || r.Success != 0 {
						t.Errorf("bad endpoint row %+v, want %d turns, none ok", r, turns)
					}
					if !strings.Contains(err.Error(), r.Contract+" on bad 0.00") {
						t.Errorf("the error %q does not name %s on bad", err, r.Contract)
					}
					tt.check(t, r)
				})
			}
		})
	}
}

// TestFailingEndpointExplained runs an endpoint that fails every call as llama-server started
// without --jinja does, with no --min-success: the run ends below the default bar, and the text
// report gives, for every contract, why its calls failed and what to do, with the fix the
// gateway logged for the server.
func TestFailingEndpointExplained(t *testing.T) {
	jinja := fakellm.Reply{Content: "tools param requires --jinja flag", Fault: fakellm.Fault{Status: 500}}
	bad := startLLM(t, fakellm.Options{Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply { return jinja })})
	ups, _ := json.Marshal([]map[string]string{{"name": "local", "baseURL": bad, "profile": "llamacpp", "model": "m"}})
	getenv := env(map[string]string{"COACH_UPSTREAMS": string(ups), "COACH_BREAKER_FAILURES": "1000"})
	var out bytes.Buffer
	err := Main(context.Background(), []string{"--sessions", "1", "--turns", "1"}, getenv, &out)
	if !errors.Is(err, ErrBelowBar) {
		t.Fatalf("Main = %v, want ErrBelowBar at the default bar %.2f", err, DefaultMinSuccess)
	}
	text := out.String()
	if !strings.Contains(text, "fix: start llama-server with --jinja") {
		t.Errorf("report:\n%s\nwant the gateway's fix for the server flag", text)
	}
	for _, c := range Contracts {
		want := "local " + c + ": success 0.00 is below 0.80: misconfigured: "
		if !strings.Contains(text, want) {
			t.Errorf("report:\n%s\nwant %q with the reason", text, want)
		}
	}
	if n := strings.Count(text, "\n  fix: "); n != len(Contracts) {
		t.Errorf("report:\n%s\nhas %d fixes, want one per contract", text, n)
	}
}

// TestRecordWritesFixtures records a run on the replay model and reads every recorded stream
// back as testdata/streams fixtures are read: replayed by fakellm, through the openai adapter.
func TestRecordWritesFixtures(t *testing.T) {
	dir := t.TempDir()
	rep, err := qualify(t, env(nil), "--sessions", "1", "--turns", "2", "--record", dir)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "replay", "*.sse"))
	if len(names) != 12 || rep.Endpoints[0].Recorded != 12 {
		t.Fatalf("recorded %d files (report says %d), want 12: 3 contracts × 2 locales × 2 turns", len(names), rep.Endpoints[0].Recorded)
	}
	if leftover, _ := filepath.Glob(filepath.Join(dir, "replay", ".staging-*")); len(leftover) != 0 {
		t.Errorf("staging directories left behind: %v", leftover)
	}
	llm := startLLM(t, fakellm.Options{Fixtures: os.DirFS(filepath.Join(dir, "replay"))})
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".sse")
		t.Run(base, func(t *testing.T) {
			raw, err := os.ReadFile(strings.TrimSuffix(name, ".sse") + ".request.json")
			if err != nil {
				t.Fatal(err)
			}
			var sent struct{ Tools []json.RawMessage }
			if err := json.Unmarshal(raw, &sent); err != nil {
				t.Fatalf("request.json: %v", err)
			}
			req := coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "replay"}}}
			if len(sent.Tools) > 0 {
				req.Tool = &coach.Tool{Name: "display_card", Parameters: []byte(`{"type":"object"}`)}
			}
			client := openai.New(openai.Config{BaseURL: llm, Model: "m", HTTPClient: fixtureClient(base)})
			s, err := client.Stream(context.Background(), req, coach.StreamHooks{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var text strings.Builder
			for {
				f, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("the fixture does not read to its end: %v", err)
				}
				text.WriteString(f.Content + f.ToolArgs)
			}
			if !json.Valid([]byte(text.String())) || !strings.HasPrefix(text.String(), "{") {
				t.Errorf("the fixture's answer %q is not a JSON object", text.String())
			}
		})
	}
}

// startLLM serves a fakellm on loopback for the test and returns its base URL.
func startLLM(t *testing.T, opts fakellm.Options) string {
	t.Helper()
	_, base, stop, err := fakellm.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return base
}

// fixtureClient sends every request with the header that makes fakellm replay fixture name.
func fixtureClient(name string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set(fakellm.FixtureHeader, name)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSharedRedisKeepsLiveStateApart qualifies a failing endpoint on a shared Redis with a
// breaker that opens at the first failure: the open circuit and the sessions stay under the
// run's own prefix, so a live gateway with the same endpoint name and prefix is not steered.
func TestSharedRedisKeepsLiveStateApart(t *testing.T) {
	url := redistest.URL(t)
	if url == "" {
		t.Skip("no Redis reachable")
	}
	prefix := "qualifytest" + strconv.FormatInt(time.Now().UnixNano(), 36)
	bad := startLLM(t, fakellm.Options{Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Fault: fakellm.Fault{Status: 503}}
	})})
	ups, _ := json.Marshal([]map[string]string{{"name": "bad", "baseURL": bad, "profile": "openai", "model": "m"}})
	getenv := env(map[string]string{"COACH_UPSTREAMS": string(ups), "REDIS_URL": url, "COACH_REDIS_PREFIX": prefix,
		"COACH_BREAKER_FAILURES": "1", "COACH_MAX_ATTEMPTS": "1"})
	if _, err := qualify(t, getenv, "--contracts", "toulmin", "--sessions", "1", "--turns", "2", "--min-success", "1"); !errors.Is(err, ErrBelowBar) {
		t.Fatalf("Main = %v, want ErrBelowBar", err)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	// Circuits are keyed by the endpoint's identity (see breaker.Identity).
	key := "{cb:" + breaker.Identity("bad", bad, "m") + "}"
	if n, err := rdb.Exists(ctx, prefix+":"+key).Result(); err != nil || n != 0 {
		t.Errorf("the live circuit key exists = %d (%v), want 0", n, err)
	}
	ours, err := rdb.Keys(ctx, prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	opened := false
	for _, k := range ours {
		if !strings.HasPrefix(k, prefix+":qualify:") {
			t.Errorf("key %s is outside the run's prefix", k)
		}
		opened = opened || strings.HasSuffix(k, ":"+key)
	}
	if !opened {
		t.Errorf("keys %v: the run's own circuit did not open, so the test proves nothing", ours)
	}
	if len(ours) > 0 {
		rdb.Del(ctx, ours...)
	}
}
