package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

func TestReleaseBody(t *testing.T) {
	const payload = `{"model":"m","messages":[]}`
	req, err := http.NewRequest(http.MethodPost, "http://mem/v1", bytes.NewBufferString(payload))
	if err != nil {
		t.Fatal(err)
	}
	release := releaseBody(req)

	// Before the response: the transport may resend, so GetBody gives the whole body again.
	again, err := req.GetBody()
	if err != nil {
		t.Fatalf("GetBody before release: %v", err)
	}
	if got, _ := io.ReadAll(again); string(got) != payload {
		t.Errorf("GetBody read %q, want %q", got, payload)
	}
	if got, _ := io.ReadAll(req.Body); string(got) != payload {
		t.Errorf("Body read %q, want %q", got, payload)
	}
	if err := req.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := req.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read after Close = %d, %v; want 0, io.EOF", n, err)
	}

	release()
	if _, err := req.GetBody(); !errors.Is(err, errBodyReleased) {
		t.Errorf("GetBody after release = %v, want %v", err, errBodyReleased)
	}
}

// recordingTransport is memTransport that keeps the requests it was given.
type recordingTransport struct {
	memTransport
	reqs []*http.Request
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return r.memTransport.RoundTrip(req)
}

// TestStreamReleasesRequestBody checks that an open stream no longer holds its marshalled
// request, whatever net/http keeps of the request.
func TestStreamReleasesRequestBody(t *testing.T) {
	rt := &recordingTransport{memTransport: memTransport{body: sseBodyOf(3)}}
	c := New(Config{BaseURL: "http://mem/v1", HTTPClient: &http.Client{Transport: rt}})
	req := coach.ModelRequest{Messages: []coach.Message{
		{Role: coach.RoleSystem, Content: strings.Repeat("a long system prompt ", 200)},
		{Role: coach.RoleUser, Content: "hi"},
	}}
	s, err := c.Stream(context.Background(), req, coach.StreamHooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(rt.reqs) != 1 {
		t.Fatalf("%d requests sent, want 1", len(rt.reqs))
	}
	sent := rt.reqs[0]
	if b, ok := sent.Body.(*sentBody); !ok || b.rc != nil {
		t.Errorf("the sent request's body is %T %+v, want a released *sentBody", sent.Body, sent.Body)
	}
	if _, err := sent.GetBody(); !errors.Is(err, errBodyReleased) {
		t.Errorf("GetBody on an open stream = %v, want %v", err, errBodyReleased)
	}
}
