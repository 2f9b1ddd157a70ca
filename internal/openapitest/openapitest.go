// Package openapitest holds the gateway to its published contract, api/openapi.yaml, in tests: it
// loads and validates the document, and checks real exchanges with a running gateway against
// it: the route and status are documented, the headers and the JSON body match their schemas,
// every NDJSON line of a stream matches components.schemas.Line, and nothing is sent that the
// document does not mention (an undocumented member of an object whose members are listed). It
// also records which documented operations the checked exchanges covered.
//
// The document is lenient where JSON Schema is (extra members are allowed unless a schema says
// otherwise); the check for undocumented members is this package's own, because the document
// must describe the wire exactly, not merely admit it.
package openapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/coachgw/coachgw/api"
)

// NDJSON is the media type of a turn's stream.
const NDJSON = "application/x-ndjson"

// SSE is the media type of a turn streamed as the AI SDK's UI message stream.
const SSE = "text/event-stream"

// Load loads api/openapi.yaml as the binary embeds it and validates the document itself; any
// problem fails t.
func Load(t testing.TB) *openapi3.T {
	t.Helper()
	data, err := api.Files.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatalf("reading the embedded api/openapi.yaml: %v", err)
	}
	loader := openapi3.NewLoader()
	// The document refers to the JSON schemas next to it (schemas/card.json); they are read from
	// the same embedded files.
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		return api.Files.ReadFile(path.Clean(u.Path))
	}
	doc, err := loader.LoadFromDataWithPath(data, &url.URL{Path: "openapi.yaml"})
	if err != nil {
		t.Fatalf("loading api/openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("api/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// Validator checks exchanges with the gateway against the document. It is safe for concurrent
// use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	line   *openapi3.SchemaRef

	mu      sync.Mutex
	covered map[string]map[int]bool // "METHOD /path" → statuses checked
}

// New loads the document and returns a Validator for it.
func New(t testing.TB) *Validator {
	t.Helper()
	doc := Load(t)
	// The document's servers name the default address; the gateway under test listens on a port
	// of its own, so routes are matched on any host.
	hostless := *doc
	hostless.Servers = nil
	router, err := gorillamux.NewRouter(&hostless)
	if err != nil {
		t.Fatalf("routing api/openapi.yaml: %v", err)
	}
	line := doc.Components.Schemas["Line"]
	if line == nil || line.Value == nil {
		t.Fatal("api/openapi.yaml has no components.schemas.Line")
	}
	return &Validator{doc: doc, router: router, line: line, covered: map[string]map[int]bool{}}
}

// Doc returns the loaded document.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// Exchange checks one exchange: req was sent with reqBody (nil for none) and answered with
// status, header and body. It reports every disagreement with the document on t and does not
// stop the test. A request the gateway accepted (2xx) must follow the document too, or the
// document would reject what the gateway takes.
func (v *Validator) Exchange(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, status)
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		t.Errorf("%s: the route is not in api/openapi.yaml: %v", what, err)
		return
	}
	op := route.Method + " " + route.Path
	what = fmt.Sprintf("%s → %d (%s)", op, status, req.URL.Path)
	v.cover(op, status)
	ctx := context.Background()
	reqInput := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if status >= 200 && status < 300 {
		accepted := req.Clone(ctx)
		accepted.Body = io.NopCloser(bytes.NewReader(reqBody))
		reqInput.Request = accepted
		if err := openapi3filter.ValidateRequest(ctx, reqInput); err != nil {
			t.Errorf("%s: the gateway accepted a request that api/openapi.yaml rejects: %v\nrequest body: %s", what, err, reqBody)
		}
		reqInput.Request = req
	}

	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	stream := ct == NDJSON || ct == SSE
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		// A stream is validated line by line below: its schema describes one line.
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: stream},
	})
	if err != nil {
		t.Errorf("%s: %v\nbody: %s", what, err, clip(body))
		return
	}
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return // ValidateResponse has reported it
	}
	if len(resp.Value.Content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			t.Errorf("%s: api/openapi.yaml documents no body, the gateway sent %s (%s)", what, clip(body), header.Get("Content-Type"))
		}
		return
	}
	media := resp.Value.Content.Get(ct)
	if media == nil {
		t.Errorf("%s: Content-Type %q is not documented (want one of %v)", what, header.Get("Content-Type"), mediaTypes(resp.Value.Content))
		return
	}
	if media.Schema == nil {
		return
	}
	switch ct {
	case NDJSON:
		v.stream(t, what, media.Schema, body)
		return
	case SSE:
		v.events(t, what, media.Schema, body)
		return
	}
	if ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return // ValidateResponse has checked the body as the text it is
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		t.Errorf("%s: body is not JSON: %v\n%s", what, err, clip(body))
		return
	}
	for _, m := range undocumented(media.Schema, value, "body") {
		t.Errorf("%s: %s", what, m)
	}
}

// stream checks every line of an NDJSON body against schema, and, for a turn's stream (schema
// Line), the ending the document promises: exactly one result or error line, and it is the
// last. Other streams (a learner's export) end where their data does.
func (v *Validator) stream(t testing.TB, what string, schema *openapi3.SchemaRef, body []byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var types []string
	for n := 1; sc.Scan(); n++ {
		typ, problems := checkLine(schema, sc.Bytes())
		for _, p := range problems {
			t.Errorf("%s: line %d %s: %s", what, n, clip(sc.Bytes()), p)
		}
		types = append(types, typ)
	}
	if err := sc.Err(); err != nil {
		t.Errorf("%s: reading the stream: %v", what, err)
	}
	ends := 0
	for _, typ := range types {
		if typ == "result" || typ == "error" {
			ends++
		}
	}
	turn := schema.Value == v.line.Value
	if len(types) == 0 || turn && (ends != 1 || (types[len(types)-1] != "result" && types[len(types)-1] != "error")) {
		t.Errorf("%s: stream of lines %v does not end with exactly one result or error line", what, types)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		t.Errorf("%s: the stream's last line is not terminated by a newline", what)
	}
}

// events checks a UI message stream: every event is one "data: " line whose JSON matches schema,
// the stream opens with start and ends with finish and data: [DONE], and exactly one
// data-coach-result or data-coach-error part comes before them.
func (v *Validator) events(t testing.TB, what string, schema *openapi3.SchemaRef, body []byte) {
	t.Helper()
	frames := strings.Split(string(body), "\n\n")
	if len(frames) < 3 || frames[len(frames)-1] != "" || frames[len(frames)-2] != "data: [DONE]" {
		t.Errorf("%s: the event stream does not end with data: [DONE] and a blank line: %s", what, clip(body))
		return
	}
	var types []string
	for n, f := range frames[:len(frames)-2] {
		data, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.ContainsAny(data, "\r\n") {
			t.Errorf("%s: event %d %q is not one data line", what, n+1, clip([]byte(f)))
			continue
		}
		typ, problems := checkLine(schema, []byte(data))
		for _, p := range problems {
			t.Errorf("%s: event %d %s: %s", what, n+1, clip([]byte(data)), p)
		}
		types = append(types, typ)
	}
	ends := 0
	for _, typ := range types {
		if typ == "data-coach-result" || typ == "data-coach-error" {
			ends++
		}
	}
	if ends != 1 || len(types) == 0 || types[0] != "start" || types[len(types)-1] != "finish" {
		t.Errorf("%s: events %v do not open with start and end with one result or error part and finish", what, types)
	}
}

// Line checks one NDJSON line against components.schemas.Line.
func (v *Validator) Line(t testing.TB, line []byte) {
	t.Helper()
	_, problems := checkLine(v.line, line)
	for _, p := range problems {
		t.Errorf("line %s: %s", clip(line), p)
	}
}

// checkLine validates one line against schema and returns its type and what is wrong with it.
func checkLine(schema *openapi3.SchemaRef, line []byte) (typ string, problems []string) {
	var value any
	if err := json.Unmarshal(line, &value); err != nil {
		return "", []string{"not JSON: " + err.Error()}
	}
	if obj, ok := value.(map[string]any); ok {
		typ, _ = obj["type"].(string)
	}
	if err := schema.Value.VisitJSON(value, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
		problems = append(problems, "does not match the "+schemaName(schema)+" schema: "+err.Error())
	}
	return typ, append(problems, undocumented(schema, value, "line")...)
}

// undocumented lists the members of value that schema does not mention, in objects whose schema
// lists its properties and says nothing about additional ones. A oneOf is followed into the
// branch its discriminator (or, without one, its single matching branch) selects.
func undocumented(ref *openapi3.SchemaRef, value any, at string) []string {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	if len(s.OneOf) > 0 {
		if branch := pick(s, value); branch != nil {
			return undocumented(branch, value, at)
		}
		return nil
	}
	var out []string
	switch v := value.(type) {
	case map[string]any:
		free := s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			prop, ok := s.Properties[k]
			switch {
			case ok:
				out = append(out, undocumented(prop, v[k], at+"."+k)...)
			case len(s.Properties) > 0 && !free:
				out = append(out, fmt.Sprintf("member %s.%s is not documented (%s lists %v)", at, k, schemaName(ref), propertyNames(s)))
			}
		}
	case []any:
		for i, item := range v {
			out = append(out, undocumented(s.Items, item, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return out
}

// pick returns the oneOf branch of s that value belongs to.
func pick(s *openapi3.Schema, value any) *openapi3.SchemaRef {
	if d := s.Discriminator; d != nil {
		obj, _ := value.(map[string]any)
		name, _ := obj[d.PropertyName].(string)
		if ref, ok := d.Mapping[name]; ok {
			for _, branch := range s.OneOf {
				if branch.Ref == ref.Ref {
					return branch
				}
			}
		}
	}
	var match *openapi3.SchemaRef
	for _, branch := range s.OneOf {
		if branch.Value != nil && branch.Value.VisitJSON(value, openapi3.VisitAsResponse()) == nil {
			if match != nil {
				return nil
			}
			match = branch
		}
	}
	return match
}

func schemaName(ref *openapi3.SchemaRef) string {
	if ref.Ref != "" {
		return ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]
	}
	return "its schema"
}

func propertyNames(s *openapi3.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func mediaTypes(c openapi3.Content) []string {
	var out []string
	for k := range c {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clip shortens a body for a failure message.
func clip(b []byte) string {
	const limit = 600
	if len(b) <= limit {
		return string(b)
	}
	return string(b[:limit]) + fmt.Sprintf("… (%d bytes)", len(b))
}

func (v *Validator) cover(op string, status int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.covered[op] == nil {
		v.covered[op] = map[int]bool{}
	}
	v.covered[op][status] = true
}

// Operations returns every operation of the document as "METHOD /path", sorted.
func (v *Validator) Operations() []string {
	var ops []string
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// Uncovered returns the operations of the document that no checked exchange reached, sorted.
func (v *Validator) Uncovered() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, op := range v.Operations() {
		if len(v.covered[op]) == 0 {
			out = append(out, op)
		}
	}
	return out
}

// Covered returns the statuses checked for op ("METHOD /path"), sorted.
func (v *Validator) Covered(op string) []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []int
	for s := range v.covered[op] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Client returns an HTTP client that checks every exchange it makes with Exchange, reporting on
// t. It reads each response whole before returning it, so it suits requests whose answer the
// test reads to the end, not a test that watches a stream as it arrives.
func (v *Validator) Client(t testing.TB) *http.Client {
	return &http.Client{Transport: &transport{v: v, t: t, next: http.DefaultTransport}}
}

type transport struct {
	v    *Validator
	t    testing.TB
	next http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := tr.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	tr.v.Exchange(tr.t, req, reqBody, resp.StatusCode, resp.Header, body)
	return resp, nil
}
