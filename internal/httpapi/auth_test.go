package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

const (
	keyAcme = "acme-key-0123456789"
	keyBeta = "beta-key-9876543210"
)

// withKeys configures the keys of tenants acme (two keys, as during a rotation) and beta.
func withKeys(d *Deps) {
	d.APIKeys = []APIKey{
		{Tenant: "acme", Hash: HashKey("acme-old-key")},
		{Tenant: "acme", Hash: HashKey(keyAcme)},
		{Tenant: "beta", Hash: HashKey(keyBeta)},
	}
	d.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })
}

func TestAuthentication(t *testing.T) {
	ts := startServer(t, withKeys)
	create := `{"contract":"toulmin"}`
	tests := []struct {
		name          string
		method, path  string
		body          string
		authorization string
		want          int
	}{
		{"no header", "POST", "/v1/sessions", create, "", http.StatusUnauthorized},
		{"unknown key", "POST", "/v1/sessions", create, "Bearer not-a-key", http.StatusUnauthorized},
		{"a key's hash is not the key", "POST", "/v1/sessions", create, "Bearer " + hexHash(keyAcme), http.StatusUnauthorized},
		{"basic scheme", "POST", "/v1/sessions", create, "Basic " + keyAcme, http.StatusUnauthorized},
		{"bearer without token", "POST", "/v1/sessions", create, "Bearer ", http.StatusUnauthorized},
		{"key without scheme", "POST", "/v1/sessions", create, keyAcme, http.StatusUnauthorized},
		{"key with a suffix", "POST", "/v1/sessions", create, "Bearer " + keyAcme + "x", http.StatusUnauthorized},
		{"valid key", "POST", "/v1/sessions", create, "Bearer " + keyAcme, http.StatusCreated},
		{"scheme is case-insensitive", "POST", "/v1/sessions", create, "bearer " + keyBeta, http.StatusCreated},
		{"older key of a tenant", "POST", "/v1/sessions", create, "Bearer acme-old-key", http.StatusCreated},
		{"modules need a key", "GET", "/v1/modules", "", "", http.StatusUnauthorized},
		{"modules with a key", "GET", "/v1/modules", "", "Bearer " + keyAcme, http.StatusOK},
		{"the seed's route needs a key", "POST", "/api/coach", `{"sessionId":"x","message":"hi"}`, "", http.StatusUnauthorized},
		{"unknown API route needs a key", "GET", "/v1/nothing-here", "", "", http.StatusUnauthorized},
		{"escaped API path needs a key", "GET", "/%761/modules", "", "", http.StatusUnauthorized},
		{"healthz is open", "GET", "/healthz", "", "", http.StatusOK},
		{"readyz is open", "GET", "/readyz", "", "", http.StatusOK},
		{"metrics are open", "GET", "/metrics", "", "", http.StatusOK},
		{"static UI paths are open", "GET", "/", "", "", http.StatusNotFound},
		{"static assets are open", "GET", "/assets/app.js", "", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h []string
			if tt.authorization != "" {
				h = []string{"Authorization", tt.authorization}
			}
			r := ts.do(tt.method, tt.path, tt.body, h...)
			if r.Status != tt.want {
				t.Fatalf("%s %s: status %d %s, want %d", tt.method, tt.path, r.Status, r.Body, tt.want)
			}
			if tt.want != http.StatusUnauthorized {
				return
			}
			if r.errorCode() != codeUnauthorized {
				t.Errorf("body %s, want error %q", r.Body, codeUnauthorized)
			}
			if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
			}
		})
	}
}

// TestTenantIsolation shows that a key sees only its own tenant's sessions: everything another
// tenant does with the id is session_not_found, and nothing of the session changes.
func TestTenantIsolation(t *testing.T) {
	ts := startServer(t, withKeys)
	acme := []string{"Authorization", "Bearer " + keyAcme}
	beta := []string{"Authorization", "Bearer " + keyBeta}
	id := ts.create("toulmin", acme...)
	tests := []struct {
		name         string
		method, path string
		body         string
		want         int
	}{
		{"read", "GET", "/v1/sessions/" + id, "", http.StatusNotFound},
		{"turn", "POST", "/v1/sessions/" + id + "/turns", `{"message":"hi"}`, http.StatusNotFound},
		{"seed route turn", "POST", "/api/coach", `{"sessionId":"` + id + `","message":"hi"}`, http.StatusNotFound},
		{"draft", "PUT", "/v1/sessions/" + id + "/draft", `{"field":"claim","value":"mine now"}`, http.StatusNotFound},
		{"proposal", "POST", "/v1/sessions/" + id + "/proposal", `{"action":"accept"}`, http.StatusNotFound},
		{"transcript", "GET", "/v1/sessions/" + id + "/messages", "", http.StatusNotFound},
		{"delete", "DELETE", "/v1/sessions/" + id, "", http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body, beta...)
			if r.Status != tt.want {
				t.Fatalf("beta %s %s: status %d %s, want %d", tt.method, tt.path, r.Status, r.Body, tt.want)
			}
			if tt.want == http.StatusNotFound && r.errorCode() != "session_not_found" {
				t.Errorf("body %s, want session_not_found", r.Body)
			}
		})
	}
	if n := ts.model.Calls(); n != 0 {
		t.Errorf("the model was called %d times for another tenant's session", n)
	}
	r := ts.do("GET", "/v1/sessions/"+id, "", acme...)
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `"version":1`) {
		t.Errorf("acme reads its session after beta's attempts: %d %s, want it untouched at version 1", r.Status, r.Body)
	}
}

func TestOpenMode(t *testing.T) {
	ts := startServer(t, nil)
	id := ts.create("toulmin")
	if r := ts.do("GET", "/v1/sessions/"+id, "", "Authorization", "Bearer anything"); r.Status != http.StatusOK {
		t.Errorf("open mode, any bearer: status %d %s, want 200", r.Status, r.Body)
	}
	if stored, _ := ts.store.Session(id); stored.Tenant != "" {
		t.Errorf("open mode stored tenant %q, want \"\"", stored.Tenant)
	}
}

func TestLookupKey(t *testing.T) {
	s := &Server{}
	withKeys(&s.deps)
	tests := []struct {
		key, wantTenant string
		wantOK          bool
	}{
		{"acme-old-key", "acme", true},
		{keyAcme, "acme", true},
		{keyBeta, "beta", true},
		{"", "", false},
		{"nope", "", false},
		{keyBeta[:len(keyBeta)-1], "", false},
	}
	for _, tt := range tests {
		if got, ok := s.lookupKey(tt.key); got.Tenant != tt.wantTenant || ok != tt.wantOK {
			t.Errorf("lookupKey(%q) = %q, %v; want %q, %v", tt.key, got.Tenant, ok, tt.wantTenant, tt.wantOK)
		}
	}
}

// TestKeysNeverLogged sends good and bad keys and checks that no key and no hash reaches the log.
func TestKeysNeverLogged(t *testing.T) {
	ts := startServer(t, withKeys)
	const wrong = "sk-wrong-but-secret-token"
	ts.do("GET", "/v1/modules", "", "Authorization", "Bearer "+wrong)
	ts.do("GET", "/v1/modules", "", "Authorization", wrong)
	ts.do("GET", "/v1/modules", "", "Authorization", "Bearer "+keyAcme)
	id := ts.create("toulmin", "Authorization", "Bearer "+keyAcme)
	ts.do("POST", "/v1/sessions/"+id+"/turns", `{"message":"hello"}`, "Authorization", "Bearer "+keyAcme)
	log := ts.log.String()
	if !strings.Contains(log, `"status":401`) || !strings.Contains(log, `"tenant":"acme"`) {
		t.Fatalf("log lacks the requests it should show:\n%s", log)
	}
	for _, secret := range []string{wrong, keyAcme, "acme-old-key", hexHash(keyAcme), hexHash(wrong)} {
		if strings.Contains(log, secret) {
			t.Errorf("the log contains %q:\n%s", secret, log)
		}
	}
}
