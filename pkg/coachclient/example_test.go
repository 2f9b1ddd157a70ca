package coachclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/coachgw/coachgw/pkg/coachclient"
)

// fakeGateway stands in for coachgw: it answers any turn with a stream in which the gateway
// recovers from a stalled model once.
func fakeGateway() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, line := range []string{
			`{"type":"delta","text":"What is your "}`,
			`{"type":"reset","reason":"stalled"}`,
			`{"type":"delta","text":"What is your "}`,
			`{"type":"delta","text":"claim?"}`,
			`{"type":"result","result":{"assistantText":"What is your claim?"},` +
				`"session":{"id":"3fa9c0de3fa9c0de3fa9c0de3fa9c0de","contract":"toulmin","version":2,"state":{"step":"claim"}}}`,
		} {
			fmt.Fprintln(w, line)
			http.NewResponseController(w).Flush()
		}
	}))
}

func Example() {
	gw := fakeGateway()
	defer gw.Close()
	ctx := context.Background()

	c := coachclient.New(gw.URL, coachclient.WithAPIKey("secret"))
	stream, err := c.Turn(ctx, "3fa9c0de3fa9c0de3fa9c0de3fa9c0de", coachclient.Message("Hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Println("stream:", err)
			return
		}
		switch e := ev.(type) {
		case coachclient.Delta:
			fmt.Printf("delta %q\n", e.Text)
		case coachclient.Reset:
			fmt.Println("reset:", e.Reason)
		case coachclient.Result:
			fmt.Println("result; session version", e.Session.Version)
		case coachclient.Error:
			fmt.Println("turn failed:", e.Code)
		}
	}
	// Output:
	// delta "What is your "
	// reset: stalled
	// delta "What is your "
	// delta "claim?"
	// result; session version 2
}

func ExampleCollect() {
	gw := fakeGateway()
	defer gw.Close()
	ctx := context.Background()

	c := coachclient.New(gw.URL)
	stream, err := c.Turn(ctx, "3fa9c0de3fa9c0de3fa9c0de3fa9c0de", coachclient.Message("Hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	text, final, err := coachclient.Collect(ctx, stream)
	if err != nil {
		fmt.Println("turn failed:", err)
		return
	}
	fmt.Println(text)
	fmt.Println(final.(coachclient.Result).Session.Version)
	// Output:
	// What is your claim?
	// 2
}
