package coach

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The engine traces with OpenTelemetry's API (go.opentelemetry.io/otel/trace) directly rather
// than through an interface of its own. The API is vendor neutral, has no exporter and does
// nothing until a TracerProvider is installed (Deps.Tracer; internal/tracing builds one), which
// is the role such an interface would play; a port of our own would copy the API's shape
// (spans, attributes, status) for no gain and translate every call. No HTTP, Redis or model
// vendor type comes with it.
//
// A turn is one span, "coach.turn", with children: "coach.claim" (the Redis claim, inside
// StartTurn), one "chat <model>" per model attempt with the GenAI semantic conventions'
// attributes, and "coach.commit". Spans carry names, counts, classes and outcomes; never the
// prompt, the model's text or the learner's.

// Attribute keys of the spans.
const (
	attrContract      = "coachgw.contract"
	attrTenant        = "coachgw.tenant"
	attrSession       = "coachgw.session.id"
	attrOutcome       = "coachgw.outcome"
	attrUpstream      = "coachgw.upstream"
	attrAttempts      = "coachgw.attempts"
	attrResets        = "coachgw.resets"
	attrOperation     = "gen_ai.operation.name"
	attrSystem        = "gen_ai.system"
	attrRequestModel  = "gen_ai.request.model"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrFinishReasons = "gen_ai.response.finish_reasons"
	attrErrorType     = "error.type"
)

// noopTracer is the Tracer of a Service given none.
var noopTracer trace.Tracer = noop.NewTracerProvider().Tracer("")

// startAttempt starts the span of one model attempt on up.
func (s *Service) startAttempt(ctx context.Context, up Upstream) trace.Span {
	_, span := s.tracer.Start(ctx, "chat "+up.ModelName, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(attrOperation, "chat"),
		attribute.String(attrSystem, up.System),
		attribute.String(attrRequestModel, up.ModelName),
		attribute.String(attrUpstream, up.Name),
	))
	return span
}

// endAttempt ends an attempt's span with what the endpoint reported and how the attempt ended.
func endAttempt(span trace.Span, usage *Usage, finish string, err error) {
	if usage != nil {
		span.SetAttributes(attribute.Int(attrInputTokens, usage.PromptTokens), attribute.Int(attrOutputTokens, usage.CompletionTokens))
	}
	if finish != "" {
		span.SetAttributes(attribute.StringSlice(attrFinishReasons, []string{finish}))
	}
	endSpan(span, err)
}

// endSpan ends span, marking it failed with err's class when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attribute.String(attrErrorType, errorType(err)))
		span.SetStatus(codes.Error, errorType(err))
	}
	span.End()
}

// errorType names err for error.type: the ModelError class or the domain error code.
func errorType(err error) string {
	var me *ModelError
	if errors.As(err, &me) {
		return me.Class
	}
	return AsError(err).Code
}
