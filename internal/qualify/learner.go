package qualify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/pkg/coachclient"
)

// Turn is what one scripted learner turn saw on the wire, timed on the learner's side.
type Turn struct {
	Contract, Locale string
	// Outcome is OutcomeOK, OutcomeFallback, OutcomeEmpty or OutcomeError.
	Outcome string
	// Code is the error code of an OutcomeError turn: the stream's error line, the gateway's
	// answer before the stream, or "transport" when the stream broke off.
	Code string
	// Resets counts the reset lines of the turn.
	Resets int
	// FirstDelta is the time from sending the turn to its first delta line (0: none came);
	// Duration the time to its last line.
	FirstDelta, Duration time.Duration
	// result and session are the result line's, for the learner's next move.
	result  json.RawMessage
	session *coachclient.Session
}

// Outcomes of a turn.
const (
	// OutcomeOK is a result the model wrote, with text the learner sees.
	OutcomeOK = "ok"
	// OutcomeFallback is a result the gateway substituted for unusable model output.
	OutcomeFallback = "fallback"
	// OutcomeEmpty is a result that shows the learner nothing, or coach_empty_response.
	OutcomeEmpty = "empty"
	// OutcomeError is a turn that ended without a result.
	OutcomeError = "error"
)

// take sends one turn and reads its stream to the end.
func take(ctx context.Context, c *coachclient.Client, sess *coachclient.Session, in coachclient.TurnRequest) (t Turn) {
	start := time.Now()
	defer func() { t.Duration = time.Since(start) }()
	stream, err := c.Turn(ctx, sess.ID, in)
	// A failed turn's error line comes before the gateway frees the session, and the client
	// stops reading at that line: a learner who answers at once may find the session still
	// busy for a moment. That is the learner's haste, not the model's doing.
	for wait := 0; isBusy(err) && wait < busyWaits; wait++ {
		if !outbound.Sleep(ctx, busyPause) {
			break
		}
		start = time.Now()
		stream, err = c.Turn(ctx, sess.ID, in)
	}
	if err != nil {
		t.Outcome, t.Code = OutcomeError, errorCode(err)
		return t
	}
	defer stream.Close()
	var visible strings.Builder
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Outcome, t.Code = OutcomeError, errorCode(err)
			return t
		}
		switch e := ev.(type) {
		case coachclient.Delta:
			if t.FirstDelta == 0 {
				t.FirstDelta = time.Since(start)
			}
			visible.WriteString(e.Text)
		case coachclient.Reset:
			t.Resets++
			visible.Reset()
		case coachclient.Result:
			t.result, t.session = e.Result, &e.Session
			switch {
			case e.Fallback:
				t.Outcome = OutcomeFallback
			case strings.TrimSpace(visible.String()) == "":
				t.Outcome = OutcomeEmpty
			default:
				t.Outcome = OutcomeOK
			}
		case coachclient.Error:
			t.Outcome, t.Code = OutcomeError, e.Code
			if e.Code == "coach_empty_response" {
				t.Outcome = OutcomeEmpty
			}
		}
	}
	if t.Outcome == "" {
		t.Outcome, t.Code = OutcomeError, "no_last_line"
	}
	return t
}

// busyWaits and busyPause bound how long a learner waits for a session still busy with its
// last turn.
const (
	busyWaits = 50
	busyPause = 20 * time.Millisecond
)

func isBusy(err error) bool {
	var apiErr *coachclient.APIError
	return errors.As(err, &apiErr) && apiErr.Code == "session_busy"
}

// errorCode names a failure to take a turn: the gateway's error code, or "transport".
func errorCode(err error) string {
	var apiErr *coachclient.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	return "transport"
}

// learner plays one scripted session: next returns the learner's next turn, given the session
// after the last turn and that turn's result (nil before the first turn), or false when the
// session has nothing more to do.
type learner interface {
	next(ctx context.Context, sess *coachclient.Session, last json.RawMessage) (coachclient.TurnRequest, bool, error)
}

// newLearner returns the scripted learner of contract in locale; n varies the script between
// sessions.
func newLearner(c *coachclient.Client, contract, locale string, n int) (learner, error) {
	switch contract {
	case "toulmin":
		return &toulminLearner{c: c, lines: toulminLines[locale], n: n}, nil
	case "cards":
		return &cardsLearner{lines: cardsLines[locale], n: n}, nil
	case "module":
		return &moduleLearner{lines: moduleLines[locale], n: n}, nil
	}
	return nil, fmt.Errorf("no scripted learner for contract %q", contract)
}

// toulminLines are what a toulmin learner says, in turn: statements long enough to become an
// element, and a question, which gets an explanation instead of a proposal.
var toulminLines = map[string][]string{
	"en": {
		"Cities should close their centres to private cars by 2030.",
		"Traffic accidents fell by a third in the centres that banned cars.",
		"What does a good answer for this step look like?",
		"Safer streets are worth the inconvenience to drivers, because lives matter more than speed.",
		"Studies from several European cities show the same drop in injuries.",
	},
	"es": {
		"Las ciudades deberían cerrar sus centros a los coches privados antes de 2030.",
		"Los accidentes de tráfico bajaron un tercio en los centros que prohibieron los coches.",
		"¿Cómo es una buena respuesta para este paso?",
		"Unas calles más seguras compensan la molestia para los conductores, porque la vida importa más que la prisa.",
		"Estudios de varias ciudades europeas muestran la misma bajada de heridos.",
	},
}

// toulminLearner writes statements and accepts every proposal the coach makes; after an
// accepted proposal it asks the coach to open the next step, as the ChatPanel does.
type toulminLearner struct {
	c     *coachclient.Client
	lines []string
	n     int
}

func (l *toulminLearner) next(ctx context.Context, sess *coachclient.Session, _ json.RawMessage) (coachclient.TurnRequest, bool, error) {
	var st struct {
		PendingProposal json.RawMessage `json:"pendingProposal"`
		IsComplete      bool            `json:"isComplete"`
	}
	_ = json.Unmarshal(sess.State, &st)
	if st.IsComplete {
		return coachclient.TurnRequest{}, false, nil
	}
	if len(st.PendingProposal) > 0 && string(st.PendingProposal) != "null" {
		if _, err := l.c.DecideProposal(ctx, sess.ID, coachclient.Accept); err != nil {
			return coachclient.TurnRequest{}, false, fmt.Errorf("accepting the proposal: %w", err)
		}
		return coachclient.Continue(), true, nil
	}
	line := l.lines[l.n%len(l.lines)]
	l.n++
	return coachclient.Message(line), true, nil
}

// cardsLines are a cards learner's words: the first message of a drill, the Continue button
// of a card without input, and written answers.
var cardsLines = map[string]struct {
	begin   string
	answers []string
}{
	"en": {"Begin training.", []string{
		"I would name the problem plainly, ask what is blocking them, and agree on a date together.",
		"I held back because I did not want to embarrass them in front of the team.",
	}},
	"es": {"Empezar el entrenamiento.", []string{
		"Nombraría el problema con claridad, preguntaría qué les bloquea y acordaríamos una fecha juntos.",
		"Me contuve porque no quería avergonzarle delante del equipo.",
	}},
}

// cardsContinue is what a cards front end sends for a card without input.
const cardsContinue = "[Continue]"

// cardsLearner answers the last card: Continue on a scenario, insight or level-up card, a
// written answer within the card's limit on a prompt or reflection, an option of a multiple
// choice.
type cardsLearner struct {
	lines struct {
		begin   string
		answers []string
	}
	n int
}

func (l *cardsLearner) next(_ context.Context, _ *coachclient.Session, last json.RawMessage) (coachclient.TurnRequest, bool, error) {
	if last == nil {
		return coachclient.Message(l.lines.begin), true, nil
	}
	var card struct {
		Type    string `json:"type"`
		Options []struct {
			ID string `json:"id"`
		} `json:"options"`
		Input struct {
			MaxLength int `json:"max_length"`
		} `json:"input"`
	}
	if err := json.Unmarshal(last, &card); err != nil {
		return coachclient.TurnRequest{}, false, fmt.Errorf("the last card does not parse: %w", err)
	}
	l.n++
	switch card.Type {
	case "multiple_choice":
		if len(card.Options) == 0 {
			return coachclient.TurnRequest{}, false, errors.New("a multiple-choice card without options")
		}
		return coachclient.Selected(card.Options[l.n%len(card.Options)].ID), true, nil
	case "prompt", "reflection":
		answer := []rune(l.lines.answers[l.n%len(l.lines.answers)])
		if m := card.Input.MaxLength; m > 0 && len(answer) > m {
			answer = answer[:m]
		}
		return coachclient.Message(string(answer)), true, nil
	}
	return coachclient.Message(cardsContinue), true, nil
}

// moduleLines are a module learner's words: the greeting, follow-ups, and the text typed into
// a form's text fields.
var moduleLines = map[string]struct {
	hello    string
	more     []string
	formText string
}{
	"en": {"Hello, I am ready to start.", []string{"Tell me more, please.", "Can you give me an example?"}, "At work, before meetings."},
	"es": {"Hola, estoy listo para empezar.", []string{"Cuéntame más, por favor.", "¿Me puedes dar un ejemplo?"}, "En el trabajo, antes de las reuniones."},
}

// moduleLearner fills in every form the coach offers, with the first option of each choice,
// the lower bound of each number and a sentence in each text field; without a form it takes the
// coach's first suggestion or asks for more.
type moduleLearner struct {
	lines struct {
		hello    string
		more     []string
		formText string
	}
	n int
}

// moduleResult is what the module learner reads of a structured response.
type moduleResult struct {
	Content struct {
		Forms []struct {
			ID     string `json:"id"`
			Fields []struct {
				ID      string   `json:"id"`
				Type    string   `json:"type"`
				Min     *float64 `json:"min"`
				Max     *float64 `json:"max"`
				Options []struct {
					Value string `json:"value"`
				} `json:"options"`
			} `json:"fields"`
		} `json:"forms"`
		NextStep *struct {
			Suggestions []string `json:"suggestions"`
		} `json:"next_step"`
	} `json:"content"`
}

func (l *moduleLearner) next(_ context.Context, _ *coachclient.Session, last json.RawMessage) (coachclient.TurnRequest, bool, error) {
	if last == nil {
		return coachclient.Message(l.lines.hello), true, nil
	}
	var res moduleResult
	_ = json.Unmarshal(last, &res) // a fallback's markdown has none of it: the learner asks on
	l.n++
	if forms := res.Content.Forms; len(forms) > 0 {
		f := forms[0]
		values := map[string]any{}
		for _, fd := range f.Fields {
			switch fd.Type {
			case "radio", "select":
				if len(fd.Options) > 0 {
					values[fd.ID] = fd.Options[0].Value
				}
			case "checkbox":
				if len(fd.Options) > 0 {
					values[fd.ID] = []string{fd.Options[0].Value}
				}
			case "number":
				v := 5.0
				if fd.Min != nil {
					v = *fd.Min
				} else if fd.Max != nil {
					v = min(v, *fd.Max)
				}
				values[fd.ID] = v
			default:
				values[fd.ID] = l.lines.formText
			}
		}
		return coachclient.FormAnswer(f.ID, values), true, nil
	}
	if ns := res.Content.NextStep; ns != nil && len(ns.Suggestions) > 0 && l.n%2 == 1 {
		return coachclient.Message(ns.Suggestions[0]), true, nil
	}
	return coachclient.Message(l.lines.more[l.n%len(l.lines.more)]), true, nil
}
