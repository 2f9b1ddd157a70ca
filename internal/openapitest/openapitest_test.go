package openapitest_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/openapitest"
)

// recorder is a testing.TB that collects what Errorf reports instead of failing the test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, strings.TrimSpace(strings.SplitN(fmt.Sprintf(format, args...), "\n", 2)[0]))
}

func (r *recorder) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

func TestLoad(t *testing.T) {
	doc := openapitest.Load(t)
	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" || seen[op.OperationID] {
				t.Errorf("%s %s: operationId %q is missing or used twice", method, path, op.OperationID)
			}
			seen[op.OperationID] = true
			ok := false
			for code := range op.Responses.Map() {
				ok = ok || strings.HasPrefix(code, "2")
			}
			if !ok {
				t.Errorf("%s %s documents no success response", method, path)
			}
		}
	}
	if doc.Components.Schemas["Line"] == nil || doc.Components.Schemas["Error"] == nil {
		t.Error("components.schemas lacks Line or Error")
	}
}

const (
	sessionPath = "/v1/sessions/0123456789abcdef0123456789abcdef"
	session     = `{"id":"0123456789abcdef0123456789abcdef","contract":"toulmin","locale":"en","version":2,"state":{"step":"claim"},"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:06Z"}`
	result      = `{"type":"result","result":{"assistantText":"Hi.","step":"claim"},"session":` + session + `}`
	safetyLine  = `{"type":"safety","kind":"crisis","locale":"es-US","message":"No estás solo.","resources":[` +
		`{"name":"988","phone":"988","text":"Envía AYUDA al 988","url":"https://988lineadevida.org"},{"name":"Emergencias","phone":"911"}]}`
	heldResult = `{"type":"result","result":{"assistantText":"I'm here."},"session":{"id":"0123456789abcdef0123456789abcdef","contract":"toulmin","locale":"es-US",` +
		`"version":3,"state":{"step":"claim"},"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:06Z","safety":{"hold":true,"since":"2026-01-02T03:04:06Z","episode":"e1"}}}`
)

func TestExchange(t *testing.T) {
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	streamHeader := http.Header{"Content-Type": {openapitest.NDJSON}, "X-Coach-Turn": {"0123456789abcdef0123456789abcdef"}}
	sseHeader := http.Header{"Content-Type": {openapitest.SSE}, "X-Vercel-Ai-Ui-Message-Stream": {"v1"}, "X-Coach-Turn": {"t"}}
	const chatReq = `{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`
	tests := []struct {
		name         string
		method, path string
		reqBody      string
		status       int
		header       http.Header
		body         string
		want         string // a piece of the one problem reported; "" for none
	}{
		{name: "documented session", method: "GET", path: sessionPath, status: 200, header: jsonHeader, body: session},
		{name: "documented error", method: "GET", path: sessionPath, status: 404, header: jsonHeader,
			body: `{"error":"session_not_found","message":"no such session"}`},
		{name: "route not in the document", method: "GET", path: "/v2/things", status: 200, header: jsonHeader, body: `{}`,
			want: "not in api/openapi.yaml"},
		{name: "undocumented status", method: "GET", path: sessionPath, status: 418, header: jsonHeader, body: `{}`,
			want: "status is not supported"},
		{name: "body against its schema", method: "GET", path: sessionPath, status: 200, header: jsonHeader,
			body: `{"id":"x","contract":"toulmin","version":"two","state":{}}`, want: "doesn't match schema"},
		{name: "undocumented member", method: "GET", path: sessionPath, status: 200, header: jsonHeader,
			body: strings.Replace(session, `"locale"`, `"tenant":"acme","locale"`, 1), want: "member body.tenant is not documented"},
		{name: "undocumented content type", method: "GET", path: sessionPath, status: 200, header: http.Header{"Content-Type": {"text/html"}},
			body: `<p>`, want: "Content-Type"},
		{name: "body where none is documented", method: "DELETE", path: sessionPath, status: 204, header: jsonHeader, body: `{}`,
			want: "documents no body"},
		{name: "accepted request the document rejects", method: "POST", path: "/v1/sessions", reqBody: `{"contract":"chess"}`,
			status: 201, header: http.Header{"Content-Type": {"application/json"}, "Location": {sessionPath}}, body: session,
			want: "accepted a request that api/openapi.yaml rejects"},
		{name: "stream", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"delta","text":"Hi"}` + "\n" + `{"type":"reset","reason":"stalled"}` + "\n" +
				`{"type":"delta","text":"Hi","block":0,"blockType":"paragraph"}` + "\n" + result + "\n"},
		{name: "crisis stream: a safety line, the supportive text and result", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: safetyLine + "\n" + `{"type":"delta","text":"I'm here."}` + "\n" + heldResult + "\n"},
		{name: "output retracted as unsafe", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"delta","text":"Bad"}` + "\n" + `{"type":"reset","reason":"unsafe_output"}` + "\n" + result + "\n"},
		{name: "safety line with an undocumented member", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: strings.Replace(safetyLine, `"kind"`, `"score":0.9,"kind"`, 1) + "\n" + heldResult + "\n", want: "member line.score is not documented"},
		{name: "safety resource with an undocumented member", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: strings.Replace(safetyLine, `"phone"`, `"email":"x@y","phone"`, 1) + "\n" + heldResult + "\n", want: "does not match the Line schema"},
		{name: "stream ending in an error line", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"error","error":"coach_step_mismatch","message":"wrong step"}` + "\n"},
		{name: "line of an unknown type", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"progress","percent":5}` + "\n" + result + "\n", want: "does not match the Line schema"},
		{name: "line missing a required member", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"delta"}` + "\n" + result + "\n", want: "does not match the Line schema"},
		{name: "line with an undocumented member", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"delta","text":"Hi","seq":1}` + "\n" + result + "\n", want: "member line.seq is not documented (DeltaLine"},
		{name: "reset of an undocumented reason", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"reset","reason":"bored"}` + "\n" + result + "\n", want: "does not match the Line schema"},
		{name: "stream without an ending", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: `{"type":"delta","text":"Hi"}` + "\n", want: "does not end with exactly one result or error line"},
		{name: "stream with two endings", method: "POST", path: sessionPath + "/turns", reqBody: `{"message":"hi"}`, status: 200, header: streamHeader,
			body: result + "\n" + result + "\n", want: "does not end with exactly one result or error line"},
		{name: "event stream", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: sse(`{"type":"start","messageId":"m"}`, `{"type":"text-start","id":"text-1","providerMetadata":{"coachgw":{"block":0,"blockType":"paragraph"}}}`,
				`{"type":"text-delta","id":"text-1","delta":"Hi"}`, `{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-reset","transient":true,"data":{"reason":"stalled"}}`,
				`{"type":"data-coach-result","data":{`+strings.TrimPrefix(result, `{"type":"result",`)+`}`, `{"type":"finish","finishReason":"stop"}`)},
		{name: "event stream of a crisis turn", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: sse(`{"type":"start","messageId":"m"}`, `{"type":"data-coach-safety","data":{`+strings.TrimPrefix(safetyLine, `{"type":"safety",`)+`}`,
				`{"type":"text-start","id":"text-1"}`, `{"type":"text-delta","id":"text-1","delta":"I'm here."}`, `{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-result","data":{`+strings.TrimPrefix(heldResult, `{"type":"result",`)+`}`, `{"type":"finish","finishReason":"stop"}`)},
		{name: "event stream ending in an error", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: sse(`{"type":"start","messageId":"m"}`, `{"type":"data-coach-error","data":{"error":"coach_stream_failed","message":"m"}}`,
				`{"type":"error","errorText":"m"}`, `{"type":"finish","finishReason":"error"}`)},
		{name: "event of an unknown type", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: sse(`{"type":"start","messageId":"m"}`, `{"type":"reasoning-start","id":"r"}`, `{"type":"data-coach-error","data":{"error":"e","message":"m"}}`,
				`{"type":"error","errorText":"m"}`, `{"type":"finish","finishReason":"error"}`), want: "does not match the UIMessageChunk schema"},
		{name: "event stream without [DONE]", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: strings.TrimSuffix(sse(`{"type":"start","messageId":"m"}`), "data: [DONE]\n\n"), want: "does not end with data: [DONE]"},
		{name: "event stream without a result", method: "POST", path: sessionPath + "/chat", reqBody: chatReq, status: 200, header: sseHeader,
			body: sse(`{"type":"start","messageId":"m"}`, `{"type":"finish","finishReason":"stop"}`), want: "do not open with start and end with one result"},
	}
	v := openapitest.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.reqBody != "" {
				body = strings.NewReader(tt.reqBody)
			}
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:1234"+tt.path, body)
			if tt.reqBody != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			r := &recorder{TB: t}
			v.Exchange(r, req, []byte(tt.reqBody), tt.status, tt.header, []byte(tt.body))
			got := r.reported()
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("reported %q, want nothing", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("reported %q, want one problem containing %q", got, tt.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"type":"delta","text":"a"}`, true},
		{`{"type":"card","card":{"type":"level_up","new_level":2,"message":"Harder now."}}`, true},
		{`{"type":"card","card":{"type":"level_up","new_level":2}}`, false},
		{`{"type":"card","card":{"card_type":"insight","content":"display_card's shape"}}`, false},
		{`{"type":"reset","reason":"stream_interrupted"}`, true},
		{result, true},
		{`{"type":"result","result":{},"session":` + session + `,"fallback":true}`, true},
		{`{"type":"error","error":"coach_stream_failed","message":"m"}`, true},
		{`{"type":"delta","text":"a","block":-1,"blockType":"paragraph"}`, false},
		{`{"type":"card"}`, false},
		{`{"type":"result","result":{}}`, false},
		{`{"type":"error","error":"coach_stream_failed"}`, false},
		{`not json`, false},
	}
	v := openapitest.New(t)
	for _, tt := range tests {
		r := &recorder{TB: t}
		v.Line(r, []byte(tt.line))
		if got := len(r.reported()) == 0; got != tt.ok {
			t.Errorf("Line(%s): valid = %v (%q), want %v", tt.line, got, r.reported(), tt.ok)
		}
	}
}

// TestClient checks that the validating client passes answers through intact, checks them, and
// records what it covered.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, `{"status":"ok"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ok","extra":true}`)
	}))
	defer srv.Close()
	v := openapitest.New(t)
	r := &recorder{TB: t}
	resp, err := v.Client(r).Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"status":"ok"}` || len(r.reported()) != 0 {
		t.Errorf("body %s, reported %q; want the body intact and nothing reported", b, r.reported())
	}
	resp, err = v.Client(r).Post(srv.URL+"/readyz", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := r.reported(); len(got) != 1 || !strings.Contains(got[0], "not in api/openapi.yaml") {
		t.Errorf("POST /readyz reported %q, want the method reported as undocumented", got)
	}
	if got := v.Covered("GET /healthz"); !slices.Equal(got, []int{200}) {
		t.Errorf("Covered(GET /healthz) = %v, want [200]", got)
	}
	missed := v.Uncovered()
	if slices.Contains(missed, "GET /healthz") || !slices.Contains(missed, "GET /readyz") || len(missed) != len(v.Operations())-1 {
		t.Errorf("Uncovered = %v, want every operation but GET /healthz", missed)
	}
}

// TestConcurrentExchanges checks that one Validator serves several goroutines, as the clients
// of concurrent turns use it.
func TestConcurrentExchanges(t *testing.T) {
	v := openapitest.New(t)
	stream := []byte(`{"type":"delta","text":"Hi","block":0,"blockType":"paragraph"}` + "\n" + result + "\n")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				r := &recorder{TB: t}
				req := httptest.NewRequest("POST", "http://127.0.0.1:1234"+sessionPath+"/turns", strings.NewReader(`{"message":"hi"}`))
				req.Header.Set("Content-Type", "application/json")
				v.Exchange(r, req, []byte(`{"message":"hi"}`), 200, http.Header{"Content-Type": {openapitest.NDJSON}, "X-Coach-Turn": {"t"}}, stream)
				get := httptest.NewRequest("GET", "http://127.0.0.1:1234"+sessionPath, nil)
				v.Exchange(r, get, nil, 200, http.Header{"Content-Type": {"application/json"}}, []byte(session))
				if got := r.reported(); len(got) > 0 {
					t.Errorf("reported %q, want nothing", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// sse returns events as a UI message stream: each a data line and a blank line, then [DONE].
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}
