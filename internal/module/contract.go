package module

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/schema"
)

// Name is the contract's wire name.
const Name = "module"

// Names of the guard rules a turn reports in coach.Outcome.Rules.
const (
	// RuleFallback: the model's output was not JSON and was sent as one markdown paragraph.
	RuleFallback = "markdown_fallback"
	// RuleLegacyForm: the output used the legacy {"type":"form"} format and was migrated.
	RuleLegacyForm = "legacy_form_migrated"
	// RuleEmptyAnswer: the model's answers showed no text, even after the corrective retry; a
	// markdown fallback (RuleFallback) said so instead, and progress did not move.
	RuleEmptyAnswer = "empty_answer"
	// RuleUnusableAnswer: the model's last answer was unusable otherwise (cut off, not valid
	// JSON, against the schema) after the corrective retry; a markdown fallback (RuleFallback)
	// said that no answer came together, and progress did not move.
	RuleUnusableAnswer = "unusable_answer"
	// RuleUnknownTopic: the model reported topics this module does not have; they were ignored
	// and are listed in coach.Outcome.Diagnostic.
	RuleUnknownTopic = "unknown_topic_ignored"
)

// PromptHistory is how many of the latest history messages a prompt shows the model.
const PromptHistory = 20

// MaxTokens is the completion cap of module requests (see schema.CompletionCap). The schema
// bounds the text of every block, form and media item but not how many there are, nor the
// topic names: counted as 4 items of each and names of 200 characters (more than a module
// has per turn), its longest answer is still over schema.MaxCompletionCap, which is therefore
// the cap. COACH_MAX_COMPLETION_TOKENS replaces it.
var MaxTokens = schema.CompletionCap(api.Schema("structured-response.json"), schema.Open{Items: 4, Chars: 200})

// ResponseSchemaName names the structured output schema in model requests.
const ResponseSchemaName = "structured_response"

var (
	responseSchema     = sync.OnceValue(func() *schema.Validator { return schema.Load("structured-response.json") })
	responseSchemaJSON = sync.OnceValue(func() json.RawMessage { return api.Schema("structured-response.json") })
)

// State is a module session's state (coach.Session.State).
type State struct {
	// Module is the id of the module being taught.
	Module string `json:"module"`
	// CoveredTopics are the ids of the topics covered so far, in module order.
	CoveredTopics []string `json:"coveredTopics"`
	// Percentage is the share of topics covered (see coverage.percentage).
	Percentage int `json:"percentage"`
	// Milestones are the milestones reached so far ("25%", …), lowest first.
	Milestones []string `json:"milestones"`
	// Forms are the forms of the latest response that offered any, by form id: a submission
	// must answer one of them.
	Forms map[string]*Form `json:"forms"`
}

// Contract is the module contract: a coach teaching one learning module of a Registry.
type Contract struct {
	reg *Registry
}

// New returns the module contract over the modules of reg.
func New(reg *Registry) *Contract { return &Contract{reg: reg} }

// Name returns "module".
func (c *Contract) Name() string { return Name }

// NewState returns the state of a new session of module opts.Module, which must be loaded.
func (c *Contract) NewState(opts coach.NewSession) (json.RawMessage, error) {
	if _, ok := c.reg.Get(opts.Module); !ok {
		return nil, coach.Errorf(coach.KindNotFound, coach.CodeModuleNotFound, "no module %q", coach.Clip(opts.Module))
	}
	return json.Marshal(State{Module: opts.Module, CoveredTopics: []string{}, Milestones: []string{}, Forms: map[string]*Form{}})
}

// Begin checks a turn's input: exactly one of a free-text message (always accepted unless
// empty) or a form submission (checked against the form of that id the session last offered).
// It detects the topics the input covers, which the prompt already reports to the model.
//
// A session on safety hold takes the same turns, each answered by the engine with SafeReply:
// a message, or a form submission for a form the session last offered (a safe reply offers
// none and keeps those offered before, so a form the client still shows can be sent). It
// refuses what it refuses in any session, continue included: that is toulmin's input, which
// no module client sends.
func (c *Contract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	var st State
	if err := json.Unmarshal(s.State, &st); err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "unreadable module session state")
	}
	mod, ok := c.reg.Get(st.Module)
	if !ok {
		return nil, coach.Errorf(coach.KindNotFound, coach.CodeModuleNotFound, "the session's module %q is no longer loaded", st.Module)
	}
	switch {
	case in.Selected != nil:
		return nil, coach.FieldError("selected", "module sessions take a message or a form, not a selected option")
	case in.Step != "":
		return nil, coach.FieldError("step", "module sessions have no steps")
	case in.Continue:
		return nil, coach.FieldError("continue", "continue is for toulmin sessions; module sessions take a message or a form")
	case in.Message != nil && in.Form != nil:
		return nil, coach.FieldError("form", "send either a message or a form, not both")
	case in.Message == nil && in.Form == nil:
		return nil, coach.FieldError("message", "send a message or a form")
	}

	var user string
	var texts []string
	if in.Message != nil {
		user = strings.TrimSpace(*in.Message)
		if user == "" {
			return nil, coach.FieldError("message", "the message is empty")
		}
		texts = []string{user}
	} else {
		form, ok := st.Forms[in.Form.ID]
		if !ok {
			return nil, coach.FieldError("form.id", "this session was not offered a form %q", coach.Clip(in.Form.ID))
		}
		answers, err := checkAnswers(form, in.Form.Values)
		if err != nil {
			return nil, err
		}
		user = formMessage(form, answers)
		for _, a := range answers {
			texts = append(texts, a.texts...)
		}
	}

	t := &turn{mod: mod, sess: s, st: st, user: user}
	t.before = newCoverage(mod, st.CoveredTopics)
	t.learner = t.before.clone()
	for _, text := range texts {
		t.learner.add(mod.Detect(text))
	}
	if ms := t.learner.newMilestones(st.Milestones); len(ms) > 0 {
		t.pending = ms[len(ms)-1]
	}
	t.stream.init()
	return t, nil
}

// The engine finds Fallback by a type assertion; this keeps the method from drifting off it.
var _ coach.Fallback = (*turn)(nil)

// turn is one module turn in progress.
type turn struct {
	mod  *Module
	sess *coach.Session
	st   State
	// user is the learner's message as history keeps it.
	user string
	// before is the coverage when the turn began; learner adds what the learner's input covered.
	before, learner *coverage
	// pending is the highest milestone the learner's input crossed, "" if none.
	pending string
	stream  streamer
}

// Prelude returns nothing: a module turn sends no events before the model answers.
func (t *turn) Prelude() []coach.Event { return nil }

// Request returns the system prompt, the latest history and the learner's message, asking for a
// structured response.
func (t *turn) Request() coach.ModelRequest {
	hist := window(t.sess.History, PromptHistory)
	msgs := make([]coach.Message, 0, len(hist)+2)
	msgs = append(msgs, coach.Message{Role: coach.RoleSystem, Content: t.systemPrompt()})
	msgs = append(msgs, hist...)
	msgs = append(msgs, coach.Message{Role: coach.RoleUser, Content: t.user})
	return coach.ModelRequest{
		Messages:  msgs,
		Schema:    &coach.OutputSchema{Name: ResponseSchemaName, Schema: responseSchemaJSON()},
		MaxTokens: MaxTokens,
	}
}

// window returns the last n messages of h, starting at a user message.
func window(h []coach.Message, n int) []coach.Message {
	if len(h) > n {
		h = h[len(h)-n:]
	}
	for len(h) > 0 && h[0].Role != coach.RoleUser {
		h = h[1:]
	}
	return h
}

// Feed relays the visible text of the fragment (see streamer).
func (t *turn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	if f.Content == "" {
		return nil
	}
	for _, e := range t.stream.feed([]byte(f.Content)) {
		emit(e)
	}
	return nil
}

// Reset forgets the output fed so far.
func (t *turn) Reset() { t.stream.reset() }
