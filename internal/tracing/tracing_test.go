package tracing_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/toulmin"
	"github.com/coachgw/coachgw/internal/tracing"
)

func TestSettings(t *testing.T) {
	tests := []struct {
		name    string
		s       tracing.Settings
		enabled bool
		err     bool
	}{
		{"nothing set", tracing.Settings{}, false, false},
		{"endpoint", tracing.Settings{Endpoint: "http://127.0.0.1:4318"}, true, false},
		{"exporter otlp", tracing.Settings{Exporter: "otlp"}, true, false},
		{"exporter none wins", tracing.Settings{Exporter: "none", Endpoint: "http://127.0.0.1:4318"}, false, false},
		{"unknown exporter", tracing.Settings{Exporter: "zipkin"}, true, true},
		{"grpc", tracing.Settings{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Enabled(); got != tt.enabled {
				t.Errorf("Enabled() = %v, want %v", got, tt.enabled)
			}
			if err := tt.s.Check(); (err != nil) != tt.err {
				t.Errorf("Check() = %v, want an error: %v", err, tt.err)
			}
		})
	}
	tracer, shutdown, err := tracing.New(context.Background(), tracing.Settings{})
	if tracer != nil || err != nil || shutdown(context.Background()) != nil {
		t.Errorf("New() without settings = %v, %v; want no tracer", tracer, err)
	}
}

const (
	learnerText = "my secret learner message"
	modelText   = "a private coaching reply"
)

// TestTurnSpans runs a toulmin turn whose first endpoint fails and whose second answers, and
// checks the spans the in-memory exporter received: the turn, its claim, one span per model
// attempt with the GenAI attributes, the commit, all in one trace, and no learner or model text.
func TestTurnSpans(t *testing.T) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp, err := tracing.Provider(ctx, sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })

	failing := coachtest.NewModel(coachtest.Fail(&coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}))
	answering := coachtest.NewModel(coachtest.Fragments(
		coach.Fragment{Content: `{"assistantText":"` + modelText + `","step":"claim"}`, FinishReason: "stop"},
		coach.Fragment{Usage: &coach.Usage{PromptTokens: 812, CompletionTokens: 64}},
	))
	svc := coach.New(coach.Deps{
		Store: coachtest.NewMemStore(),
		Upstreams: []coach.Upstream{
			{Name: "primary", Model: failing, ModelName: "gpt-4o-mini", System: "openai"},
			{Name: "local", Model: answering, ModelName: "qwen2.5", System: "llamacpp"},
		},
		Contracts: []coach.Contract{toulmin.New()},
		Tracer:    tp.Tracer(tracing.Name),
	})
	sess, err := svc.CreateSession(ctx, "acme", "toulmin", coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	msg := learnerText
	run, err := svc.StartTurn(ctx, "acme", sess.ID, coach.TurnInput{Message: &msg})
	if err != nil {
		t.Fatal(err)
	}
	if rep := run.Run(ctx, coach.EmitFunc(func(coach.Event) error { return nil })); rep.Outcome != "ok" {
		t.Fatalf("turn outcome = %s (%v), want ok", rep.Outcome, rep.Err)
	}

	spans := exp.GetSpans()
	var names []string
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		names = append(names, s.Name)
		byName[s.Name] = s
	}
	if want := []string{"coach.claim", "chat gpt-4o-mini", "chat qwen2.5", "coach.commit", "coach.turn"}; !slices.Equal(names, want) {
		t.Fatalf("spans = %q, want %q (in the order they ended)", names, want)
	}
	turn := byName["coach.turn"]
	for _, s := range spans {
		if s.SpanContext.TraceID() != turn.SpanContext.TraceID() {
			t.Errorf("span %s is in another trace", s.Name)
		}
		if s.Name != "coach.turn" && s.Parent.SpanID() != turn.SpanContext.SpanID() {
			t.Errorf("span %s is not a child of the turn's span", s.Name)
		}
		for _, kv := range s.Attributes {
			if v := kv.Value.Emit(); strings.Contains(v, "secret") || strings.Contains(v, "private") {
				t.Errorf("span %s attribute %s carries conversation text: %q", s.Name, kv.Key, v)
			}
		}
	}
	wantAttrs := func(span string, want ...attribute.KeyValue) {
		t.Helper()
		got := byName[span].Attributes
		for _, w := range want {
			if !slices.ContainsFunc(got, func(kv attribute.KeyValue) bool { return kv.Key == w.Key && kv.Value.Emit() == w.Value.Emit() }) {
				t.Errorf("span %s lacks %s=%s; has %v", span, w.Key, w.Value.Emit(), got)
			}
		}
	}
	wantAttrs("chat gpt-4o-mini",
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.system", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o-mini"), attribute.String("error.type", "server"))
	if st := byName["chat gpt-4o-mini"].Status; st.Code != codes.Error {
		t.Errorf("failed attempt's status = %v, want Error", st)
	}
	wantAttrs("chat qwen2.5",
		attribute.String("gen_ai.system", "llamacpp"), attribute.String("gen_ai.request.model", "qwen2.5"),
		attribute.Int("gen_ai.usage.input_tokens", 812), attribute.Int("gen_ai.usage.output_tokens", 64),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}))
	wantAttrs("coach.turn",
		attribute.String("coachgw.contract", "toulmin"), attribute.String("coachgw.outcome", "ok"),
		attribute.String("coachgw.upstream", "local"), attribute.Int("coachgw.attempts", 2))
	if st := turn.Status; st.Code == codes.Error {
		t.Errorf("turn span status = %v, want unset", st)
	}
}
