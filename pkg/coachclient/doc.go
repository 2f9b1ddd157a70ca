// Package coachclient is a Go client of the coachgw gateway, for services that call it or proxy
// it: the session calls, and turns read as a typed stream of events. It owns the client side of
// the wire contract (api/openapi.yaml) and depends on nothing of the gateway's internals.
//
// A turn is an NDJSON stream: Delta events carry the visible text as the model produces it, a
// Reset means "discard this turn's text so far, the gateway is retrying", and the stream ends
// with one Result (the guarded result and the session after the turn) or one Error.
//
//	c := coachclient.New("http://127.0.0.1:8080", coachclient.WithAPIKey(key))
//	sess, err := c.CreateSession(ctx, coachclient.CreateSessionRequest{Contract: "toulmin"})
//	if err != nil {
//		return err
//	}
//	stream, err := c.Turn(ctx, sess.ID, coachclient.Message("Cities should ban cars."))
//	if err != nil {
//		var apiErr *coachclient.APIError // e.g. 409 session_busy, 422 invalid_input
//		if errors.As(err, &apiErr) && apiErr.Code == "session_busy" {
//			// another turn of this session is running
//		}
//		return err
//	}
//	defer stream.Close()
//	for {
//		ev, err := stream.Next()
//		if err == io.EOF {
//			break // after the Result or Error event
//		}
//		if err != nil {
//			return err // ErrTruncated, ErrLineTooLong, ctx's error, ...
//		}
//		switch e := ev.(type) {
//		case coachclient.Delta:
//			fmt.Print(e.Text)
//		case coachclient.Reset:
//			// clear the text shown for this turn
//		case coachclient.Result:
//			fmt.Println("\nversion", e.Session.Version)
//		case coachclient.Error:
//			return e
//		}
//	}
//
// Collect does that loop for callers that only want the final text and event. The program in
// example/proxy passes a turn's stream on to its own client line by line, without buffering.
//
// Messages reads the learner's transcript back a page at a time (newest page first, each page
// oldest first), and Transcript reads all of it; Continue builds the toulmin turn that opens the
// current step without a learner message.
package coachclient
