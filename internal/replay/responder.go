package replay

import "github.com/coachgw/coachgw/internal/fakellm"

// Responder returns the replay model as the answering brain of a fakellm server: the embedded
// model of a gateway run with nothing configured, and cmd/fakellm's default.
func Responder() fakellm.Responder {
	return fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		msgs := make([]Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = Message{Role: m.Role, Content: m.Content}
		}
		a := Respond(msgs, req.ToolChoice)
		if a.ToolName != "" {
			return fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: a.ToolName, Arguments: a.ToolArgs}}
		}
		return fakellm.Reply{Content: a.Content}
	})
}
