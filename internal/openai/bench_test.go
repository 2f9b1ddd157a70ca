package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
)

var coachSchema = coach.OutputSchema{Name: "coach-ai-result", Schema: api.Schema("coach-ai-result.json")}

// memTransport answers every request with body, in memory, so that benchmarks measure the
// client's work and not the network's.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(m.body)),
		Request: r,
	}, nil
}

// sseBodyOf returns a stream of n content chunks like OpenAI's, then finish and [DONE].
func sseBodyOf(n int) []byte {
	var b strings.Builder
	b.WriteString("data: " + chunkRole + "\n\n")
	for range n {
		b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,` +
			`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" word"},` +
			`"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString("data: " + chunkStop + "\n\ndata: [DONE]\n\n")
	return []byte(b.String())
}

// adapterRun streams one completion of n chunks through Client.
func adapterRun(tb testing.TB, c *Client) int {
	s, err := c.Stream(context.Background(), hello, coach.StreamHooks{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	n := 0
	for {
		if _, err := s.Next(); err == io.EOF {
			return n
		} else if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

// baselineRun streams the same completion with go-openai alone.
func baselineRun(tb testing.TB, c *oai.Client) int {
	s, err := c.CreateChatCompletionStream(context.Background(), oai.ChatCompletionRequest{
		Model: DefaultModel, Messages: []oai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	n := 0
	for {
		if _, err := s.Recv(); err == io.EOF {
			return n
		} else if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

func memClients(chunks int) (*Client, *oai.Client) {
	hc := &http.Client{Transport: memTransport{body: sseBodyOf(chunks)}}
	oc := oai.DefaultConfig(testKey)
	oc.BaseURL, oc.HTTPClient = "http://mem/v1", hc
	return New(Config{BaseURL: "http://mem/v1", APIKey: testKey, HTTPClient: hc}), oai.NewClientWithConfig(oc)
}

// TestOneAllocationPerChunk checks the hot path: per streamed chunk, the adapter allocates only
// the text it returns (go-openai's own decoding allocated about 19 times per chunk).
func TestOneAllocationPerChunk(t *testing.T) {
	const few, many = 20, 220
	allocs := func(chunks int) float64 {
		c, _ := memClients(chunks)
		return testing.AllocsPerRun(20, func() { adapterRun(t, c) })
	}
	// The counts wobble by a fraction when a GC empties a sync.Pool mid-run; a second
	// allocation per chunk would add a whole one.
	if perChunk := (allocs(many) - allocs(few)) / (many - few); perChunk >= 1.5 {
		t.Errorf("allocations per chunk = %.3f, want 1 (the content string)", perChunk)
	}
}

const benchChunks = 200

func BenchmarkStream(b *testing.B) {
	c, _ := memClients(benchChunks)
	b.ReportAllocs()
	for b.Loop() {
		adapterRun(b, c)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChunks), "ns/chunk")
}

// BenchmarkGoOpenAIBaseline is the same stream read with go-openai alone, for comparison.
func BenchmarkGoOpenAIBaseline(b *testing.B) {
	_, oc := memClients(benchChunks)
	b.ReportAllocs()
	for b.Loop() {
		baselineRun(b, oc)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChunks), "ns/chunk")
}

// BenchmarkRequest measures building a structured-output request, the schema cache included.
func BenchmarkRequest(b *testing.B) {
	c, _ := memClients(0)
	req := hello
	req.Schema = &coachSchema
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.request(req, *c.shape.Load()); err != nil {
			b.Fatal(err)
		}
	}
}

// toulminRequest is a realistic toulmin turn: a 6 KB system prompt, twelve messages of
// history (the coach's turns are the JSON it answered with) and the strict output schema.
func toulminRequest() coach.ModelRequest {
	const paragraph = "You are a patient writing coach who helps a learner build one argument with " +
		"the Toulmin model, one step at a time. Ask one question per turn; never write the " +
		"learner's text for them, but you may suggest a wording they can accept (\"Would you say: " +
		"'School uniforms reduce bullying'?\"). Keep answers to 2-3 sentences & stay friendly.\n\n" +
		"- A claim is a debatable statement; \"grounds\" are the facts behind it.\n" +
		"- The warrant links grounds to claim; backing supports the warrant.\n\n"
	var system strings.Builder
	for i := 0; system.Len() < 6<<10; i++ {
		fmt.Fprintf(&system, "## Rule %d\n%s", i+1, paragraph)
	}
	system.WriteString("## Session facts\ncontract: toulmin\nstep: grounds\nlanguage: en")
	req := coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleSystem, Content: system.String()}},
		Schema: &coachSchema, MaxTokens: 800, Temperature: 0.7}
	for i := range 6 {
		req.Messages = append(req.Messages,
			coach.Message{Role: coach.RoleUser, Content: fmt.Sprintf("I think school uniforms are a good idea, because they make everyone look the same (turn %d).", i)},
			coach.Message{Role: coach.RoleAssistant, Content: fmt.Sprintf(`{"assistantText":"Good start! What facts support your claim? For example, has your school seen fewer conflicts since turn %d?","step":"grounds","confidence":0.6,"nextQuestion":"Which evidence do you have?","shouldAdvance":false}`, i)})
	}
	req.Messages = append(req.Messages, coach.Message{Role: coach.RoleUser, Content: "A study found 20% less bullying in schools with uniforms."})
	return req
}

// toulminChatRequest is toulminRequest as the adapter hands it to go-openai.
func toulminChatRequest(b *testing.B) oai.ChatCompletionRequest {
	c, _ := memClients(0)
	creq, err := c.request(toulminRequest(), *c.shape.Load())
	if err != nil {
		b.Fatal(err)
	}
	return creq
}

// BenchmarkRequestEncode measures encoding the body of a realistic toulmin request, which is
// what building it costs on top of BenchmarkRequest.
func BenchmarkRequestEncode(b *testing.B) {
	creq := toulminChatRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeRequest(&creq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestMarshal is the same request marshalled by encoding/json, as go-openai did.
func BenchmarkRequestMarshal(b *testing.B) {
	creq := toulminChatRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(creq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrict measures rewriting the toulmin schema, which the cache does once per schema.
func BenchmarkStrict(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Strict(coachSchema.Schema); err != nil {
			b.Fatal(err)
		}
	}
}
