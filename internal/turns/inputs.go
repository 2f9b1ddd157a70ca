package turns

import "context"

// Inputs reads the learner input of each running turn, which its log's first batch keeps
// (Write.Input) where every instance can read it. A turn stores its learner entry with its
// answer, at its end; until then a conversation restored on any instance would lack the message
// the learner just sent. A Log that also implements Inputs (internal/redisstore's does) keeps
// them.
type Inputs interface {
	// Input returns the input the first batch of turn of session kept, or nil.
	Input(ctx context.Context, session, turn string) ([]byte, error)
}

// Inputs returns the Inputs of the turns' log, or nil when turns are not resumable or their log
// keeps no inputs.
func (t *Turns) Inputs() Inputs {
	in, _ := t.Log().(Inputs)
	return in
}
