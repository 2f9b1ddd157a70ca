// Package tracing owns the gateway's OpenTelemetry setup: the TracerProvider whose tracer the
// engine traces turns with (see internal/coach, trace.go), exporting over OTLP/HTTP. It is off
// unless the standard OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER is set; everything else (headers, timeouts, the service name, resource
// attributes, sampling) follows the OpenTelemetry SDK's own environment variables.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of the gateway's spans and the default service.name.
const Name = "coachgw"

// Settings are the environment variables that turn tracing on, as internal/config reads them.
type Settings struct {
	// Exporter is OTEL_TRACES_EXPORTER: "otlp", "none", or empty.
	Exporter string
	// Endpoint is the URL spans are posted to (see config.Config.OTLPEndpoint); empty leaves it
	// to the SDK's default, http://localhost:4318/v1/traces.
	Endpoint string
	// Protocol is OTEL_EXPORTER_OTLP_PROTOCOL (or its _TRACES_ variant); only http/protobuf,
	// the SDK's default, is built in.
	Protocol string
}

// Enabled reports whether the settings ask for traces.
func (s Settings) Enabled() bool {
	return s.Exporter != "none" && (s.Exporter != "" || s.Endpoint != "")
}

// Check reports settings this build cannot honour.
func (s Settings) Check() error {
	if !s.Enabled() {
		return nil
	}
	if s.Exporter != "" && s.Exporter != "otlp" {
		return fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", s.Exporter)
	}
	if s.Protocol != "" && s.Protocol != "http/protobuf" {
		return fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: only http/protobuf is built in", s.Protocol)
	}
	return nil
}

// New returns the tracer of the gateway's spans and a shutdown that flushes and stops the
// exporter. When the settings do not enable tracing it returns nil and a shutdown that does
// nothing, and the engine traces nothing.
func New(ctx context.Context, s Settings) (trace.Tracer, func(context.Context) error, error) {
	if err := s.Check(); err != nil {
		return nil, nil, err
	}
	if !s.Enabled() {
		return nil, func(context.Context) error { return nil }, nil
	}
	// The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS) itself.
	var opts []otlptracehttp.Option
	if s.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(s.Endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	tp, err := Provider(ctx, sdktrace.WithBatcher(exp))
	if err != nil {
		return nil, nil, errors.Join(err, exp.Shutdown(ctx))
	}
	return tp.Tracer(Name), tp.Shutdown, nil
}

// Provider returns an SDK TracerProvider with the gateway's resource (service.name coachgw
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise) and opts, e.g. the
// exporter. Tests pass an in-memory exporter through it.
func Provider(ctx context.Context, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, error) {
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName(Name)),
		must(resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, opts...)...), nil
}

// must drops a resource detector's partial error: a resource attribute the environment spells
// wrong costs that attribute, not the traces.
func must(r *resource.Resource, _ error) *resource.Resource { return r }
