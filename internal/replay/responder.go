package replay

import "github.com/coachgw/coachgw/internal/fakellm"

// Responder returns the replay model as the answering brain of a fakellm server: the embedded
// model of a gateway run with nothing configured, and cmd/fakellm's default.
func Responder() fakellm.Responder {
	return fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		if judgeRequest(req) {
			return fakellm.Reply{Content: judgement(req)}
		}
		msgs := make([]Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = Message{Role: m.Role, Content: m.Content}
		}
		a := Respond(msgs, req.ToolChoice)
		// A request that offers no tools (an endpoint profile that asks for the card as
		// structured output) gets the arguments as content, as a real model would write them.
		if a.ToolName != "" && len(req.Tools) > 0 {
			return fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: a.ToolName, Arguments: a.ToolArgs}}
		}
		if a.ToolName != "" {
			return fakellm.Reply{Content: a.ToolArgs}
		}
		return fakellm.Reply{Content: a.Content}
	})
}
