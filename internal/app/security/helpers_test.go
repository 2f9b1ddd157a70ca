// Package security_test attacks a real gateway end to end: authentication and tenants, rate
// limiting across instances, hostile input, secrets in logs, and learners who try to talk the
// model out of the server's rules.
package security_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// Client keys of the tenants the tests configure.
const (
	keyAcme = "sk-coach-acme-7b1f0c2e9d"
	keyBeta = "sk-coach-beta-41aa93c5f0"
	// keyAcme2 is acme's second key, as a second front end of the tenant holds.
	keyAcme2 = "sk-coach-acme-second-55d0e1"
)

// hexHash returns the configured form of key.
func hexHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// withKeys configures tenants acme (two keys) and beta.
func withKeys(c *config.Config) {
	c.APIKeys = []config.APIKey{
		{Tenant: "acme", Hash: sha256.Sum256([]byte(keyAcme))},
		{Tenant: "acme", Hash: sha256.Sum256([]byte(keyAcme2))},
		{Tenant: "beta", Hash: sha256.Sum256([]byte(keyBeta))},
	}
}

// answer is an HTTP answer read whole; Lines holds the lines of an NDJSON stream.
type answer struct {
	Status int
	Header http.Header
	Body   string
	Lines  []apptest.Line
}

// code returns the "error" member of a JSON error body.
func (a answer) code() string {
	var b struct{ Error string }
	_ = json.Unmarshal([]byte(a.Body), &b)
	return b.Error
}

// last returns the stream's last line.
func (a answer) last() apptest.Line {
	if len(a.Lines) == 0 {
		return apptest.Line{}
	}
	return a.Lines[len(a.Lines)-1]
}

// send sends a request to g with key as bearer token (none when empty). body is sent as is when
// it is a string and as JSON otherwise; a nil body sends none.
func send(t *testing.T, g *apptest.Gateway, key, method, path string, body any) answer {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, g.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
	if resp.Header.Get("Content-Type") == "application/x-ndjson" {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l apptest.Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
			}
			l.Raw = sc.Text()
			a.Lines = append(a.Lines, l)
		}
	}
	return a
}

// create creates a session of contract for key and returns its id.
func create(t *testing.T, g *apptest.Gateway, key, contract string) string {
	t.Helper()
	body := map[string]string{"contract": contract}
	if contract == "module" {
		body["module"] = "anxiety-basics"
	}
	a := send(t, g, key, "POST", "/v1/sessions", body)
	if a.Status != http.StatusCreated {
		t.Fatalf("creating a %s session: %d %s", contract, a.Status, a.Body)
	}
	var s apptest.Session
	if err := json.Unmarshal([]byte(a.Body), &s); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// redisOf returns a client of the Redis the gateway configured by cfg uses, skipping the test
// when that is an embedded one the test cannot reach (outside CI, without a local Redis).
func redisOf(t *testing.T, cfg config.Config) *redis.Client {
	t.Helper()
	if cfg.RedisURL == "" {
		t.Skip("needs a real Redis shared with the gateway")
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// keysUnder returns every key under prefix but the gateway instance's own liveness key
// ({prefix}:inst:<id>), which names no session, learner or client.
func keysUnder(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var keys []string
	iter := c.Scan(ctx, 0, prefix+":*", 500).Iterator()
	for iter.Next(ctx) {
		if !strings.HasPrefix(iter.Val(), prefix+":inst:") {
			keys = append(keys, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return keys
}

// decode unmarshals raw into a map.
func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}
