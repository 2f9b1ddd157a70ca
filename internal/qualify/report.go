package qualify

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// Report is a run's outcome, per endpoint and contract.
type Report struct {
	Contracts []string         `json:"contracts"`
	Locales   []string         `json:"locales"`
	Sessions  int              `json:"sessionsPerLocale"`
	Turns     int              `json:"turnsPerSession"`
	Endpoints []EndpointReport `json:"endpoints"`
}

// EndpointReport is one endpoint's rows, the distinct error messages its gateway logged, and
// how many model calls were recorded.
type EndpointReport struct {
	Name          string   `json:"name"`
	Rows          []Row    `json:"contracts"`
	GatewayErrors []string `json:"gatewayErrors,omitempty"`
	Recorded      int      `json:"recorded,omitempty"`
}

// Row is one contract on one endpoint.
type Row struct {
	Endpoint string `json:"endpoint"`
	Contract string `json:"contract"`
	// Turns were taken; OK of them ended in a result the model wrote with visible text,
	// Fallbacks in one the gateway substituted, Empty in one showing nothing (or
	// coach_empty_response), Errors without a result (ErrorCodes says how).
	Turns      int            `json:"turns"`
	OK         int            `json:"ok"`
	Fallbacks  int            `json:"fallbacks"`
	Empty      int            `json:"empty"`
	Errors     int            `json:"errors"`
	ErrorCodes map[string]int `json:"errorCodes,omitempty"`
	// Success is OK / Turns.
	Success float64 `json:"success"`
	// Corrective counts model calls that repeated a turn because its output was unusable;
	// Retries those repeated after a failed call before any text was sent; Resets the reset
	// lines the learners saw; Guards the guard rules that changed a result (Rules by name).
	Corrective int            `json:"correctiveRetries"`
	Retries    int            `json:"retries"`
	Resets     int            `json:"resets"`
	Guards     int            `json:"guardFirings"`
	Rules      map[string]int `json:"guardRules,omitempty"`
	// FirstDelta and TurnTime are in milliseconds, as the learner measured them.
	FirstDelta Percentiles `json:"firstDeltaMs"`
	TurnTime   Percentiles `json:"turnMs"`
	// Tokens are those the endpoint reported for every call, failed and retried ones included;
	// nil when it reported none.
	Tokens *Tokens `json:"tokens"`
	// Causes counts why the calls of turns that did not end ok failed, as "<end>: <detail>"
	// of the gateway's attempt log (e.g. "invalid_request: 400 … failed to parse grammar").
	Causes map[string]int `json:"causes,omitempty"`
}

// Reason returns the most frequent cause of the row's failed calls, "" when there was none.
func (r Row) Reason() string {
	best, n := "", 0
	for c, k := range r.Causes {
		if k > n || k == n && c < best {
			best, n = c, k
		}
	}
	return best
}

// fixes say what an operator can do about calls that ended so (AttemptEntry.End).
var fixes = map[string]string{
	"invalid_request": "the endpoint rejects the request the profile builds (a schema its grammar cannot compile, a parameter it does not know): check the endpoint's profile in COACH_UPSTREAMS and the server's log",
	"refused":         "the prompt does not fit the endpoint's context window or its content policy: start the server with a larger context (llama-server -c) or lower COACH_HISTORY_LIMIT",
	"invalid_output":  "the model's answers do not follow the contract's schema even after the corrective retry: use a profile with strict structured output for this server, or a model that follows it",
	"empty":           "the model's answers show no text: use a profile with strict structured output for this server, or a model that follows it",
	"cut_off":         "the answers run into the completion cap or the context window: raise the server's context (llama-server -c) or the contract's completion cap",
	"timeout":         "the endpoint is slower than the profile's deadlines: raise COACH_FIRST_BYTE_TIMEOUT / COACH_IDLE_TIMEOUT for it, or use a faster server",
	"misconfigured":   "the server must be started differently: see the fix the gateway logged, below",
	"rate_limited":    "the endpoint limits the gateway's rate: lower --sessions, or raise the endpoint's limits",
}

// Fix returns what an operator can do about the row's Reason.
func (r Row) Fix() string {
	end, _, _ := strings.Cut(r.Reason(), ":")
	if f, ok := fixes[end]; ok {
		return f
	}
	return "the endpoint fails (" + cmp.Or(end, "no call failed, but turns did not end ok") + "): see the gateway's log and the server's"
}

// Tokens are a sum of the token counts endpoints reported.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
}

// Percentiles are nearest-rank percentiles of N samples.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
}

// Below returns the rows whose success rate is below bar.
func (r *Report) Below(bar float64) []Row {
	var out []Row
	for _, ep := range r.Endpoints {
		for _, row := range ep.Rows {
			if row.Success < bar {
				out = append(out, row)
			}
		}
	}
	return out
}

// summarize builds the row of contract on endpoint from the turns the learners took and what
// the engine reported.
func summarize(endpoint, contract string, turns []Turn, eng counts) Row {
	row := Row{Endpoint: endpoint, Contract: contract, Corrective: eng.corrective(), Retries: eng.retries,
		Guards: eng.guards, Rules: eng.rules, Causes: eng.causes}
	if u := eng.tokens; u != nil {
		row.Tokens = &Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens}
	}
	var first, whole []time.Duration
	for _, t := range turns {
		if t.Contract != contract {
			continue
		}
		row.Turns++
		row.Resets += t.Resets
		switch t.Outcome {
		case OutcomeOK:
			row.OK++
		case OutcomeFallback:
			row.Fallbacks++
		case OutcomeEmpty:
			row.Empty++
		default:
			row.Errors++
			if row.ErrorCodes == nil {
				row.ErrorCodes = map[string]int{}
			}
			row.ErrorCodes[t.Code]++
		}
		if t.FirstDelta > 0 {
			first = append(first, t.FirstDelta)
		}
		whole = append(whole, t.Duration)
	}
	if row.Turns > 0 {
		row.Success = float64(row.OK) / float64(row.Turns)
	}
	row.FirstDelta, row.TurnTime = percentiles(first), percentiles(whole)
	return row
}

// percentiles returns the nearest-rank p50 and p95 of d in milliseconds.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	rank := func(p float64) float64 {
		i := int(p/100*float64(len(d))+0.999999) - 1
		return float64(d[min(max(i, 0), len(d)-1)].Microseconds()) / 1000
	}
	return Percentiles{N: len(d), P50: rank(50), P95: rank(95)}
}

// counts is what the engine reported of one contract's turns.
type counts struct {
	// extra counts model calls beyond each turn's first; retries those the engine repeated after
	// a failed call (Observer.Retried with the call's ModelError class; a corrective retry
	// before text is Retried with "invalid_output" and not counted here); recovered those
	// restarted after a stream broke off or stalled once text was out (Observer.Reset with
	// another reason than invalid_output).
	extra, retries, recovered int
	guards                    int
	rules                     map[string]int
	tokens                    *coach.Usage
	// causes counts the failed calls of turns that did not end ok, by "<end>: <detail>".
	causes map[string]int
}

// maxCauses bounds the distinct causes kept per contract.
const maxCauses = 20

// corrective returns the calls that repeated a turn for its unusable output: on a gateway with
// one endpoint every call beyond a turn's first is a transport retry, a recovery of a broken
// stream, or that. (Counting the engine's invalid_output resets instead would count once too
// often a turn that ends in a fallback after its text was out: that reset retries nothing.)
func (c counts) corrective() int {
	return max(c.extra-c.retries-c.recovered, 0)
}

// invalidOutput is the engine's reason for a corrective retry and its reset.
const invalidOutput = "invalid_output"

// tally is the engine's Observer in a qualifying gateway: it passes every call on to the
// gateway's metrics and adds up, per contract, what the learners cannot see.
type tally struct {
	coach.Observer
	mu sync.Mutex
	by map[string]*counts
}

func newTally() *tally { return &tally{by: map[string]*counts{}} }

// wrap is the app.WithObserver hook.
func (t *tally) wrap(m coach.Observer) coach.Observer {
	t.Observer = m
	return t
}

func (t *tally) add(contract string, f func(*counts)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.by[contract]
	if c == nil {
		c = &counts{}
		t.by[contract] = c
	}
	f(c)
}

// of returns the counts of contract.
func (t *tally) of(contract string) counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.by[contract]; c != nil {
		return *c
	}
	return counts{}
}

// TurnEnded adds the turn's extra calls, guard firings and tokens.
func (t *tally) TurnEnded(r coach.Report) {
	t.Observer.TurnEnded(r)
	t.add(r.Contract, func(c *counts) {
		c.extra += max(r.Attempts-1, 0)
		if r.Outcome != "ok" {
			for _, a := range r.AttemptLog {
				if a.End == "ok" || a.End == "canceled" {
					continue
				}
				cause := a.End + ": " + a.Detail
				if c.causes == nil {
					c.causes = map[string]int{}
				}
				if _, ok := c.causes[cause]; ok || len(c.causes) < maxCauses {
					c.causes[cause]++
				}
			}
		}
		for _, rule := range r.Rules {
			if c.rules == nil {
				c.rules = map[string]int{}
			}
			c.rules[rule]++
			c.guards++
		}
		for _, s := range r.Spent {
			// An estimate from bytes is the gateway's guess for the budget, not what the
			// endpoint said: the report shows only reported tokens.
			if !s.Estimated {
				c.tokens = c.tokens.Add(s.Usage)
			}
		}
	})
}

// Retried counts a call repeated after a failed one; a corrective retry is left to corrective.
func (t *tally) Retried(contract, class string) {
	t.Observer.Retried(contract, class)
	if class != invalidOutput {
		t.add(contract, func(c *counts) { c.retries++ })
	}
}

// Reset counts a restart after a broken stream.
func (t *tally) Reset(contract, reason string) {
	t.Observer.Reset(contract, reason)
	if reason != invalidOutput {
		t.add(contract, func(c *counts) { c.recovered++ })
	}
}

// WriteText writes the report as a table, then the gateway's error messages per endpoint, and
// for each row whose success rate is below bar why its calls failed and what to do about it.
func (r *Report) WriteText(w io.Writer, bar float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "endpoint\tcontract\tturns\tok\tfallback\tempty\terror\tsuccess\tcorrective\tretries\tresets\tguards\tfirst delta p50/p95\tturn p50/p95\ttokens in/out")
	for _, ep := range r.Endpoints {
		for _, row := range ep.Rows {
			tokens := "-"
			if row.Tokens != nil {
				tokens = fmt.Sprintf("%d/%d", row.Tokens.Prompt, row.Tokens.Completion)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n",
				row.Endpoint, row.Contract, row.Turns, row.OK, row.Fallbacks, row.Empty, row.Errors, row.Success,
				row.Corrective, row.Retries, row.Resets, row.Guards, ms(row.FirstDelta), ms(row.TurnTime), tokens)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ep := range r.Endpoints {
		for _, row := range ep.Rows {
			if len(row.ErrorCodes) > 0 {
				fmt.Fprintf(w, "%s %s errors: %s\n", row.Endpoint, row.Contract, sortedCounts(row.ErrorCodes))
			}
			if len(row.Rules) > 0 {
				fmt.Fprintf(w, "%s %s guard rules: %s\n", row.Endpoint, row.Contract, sortedCounts(row.Rules))
			}
		}
		for _, row := range ep.Rows {
			if row.Success < bar {
				reason := cmp.Or(row.Reason(), "no call failed; turns ended without a result the model wrote")
				fmt.Fprintf(w, "%s %s: success %.2f is below %.2f: %s\n  fix: %s\n", row.Endpoint, row.Contract, row.Success, bar, reason, row.Fix())
			}
		}
		for _, msg := range ep.GatewayErrors {
			fmt.Fprintf(w, "%s: the gateway logged: %s\n", ep.Name, msg)
		}
		if ep.Recorded > 0 {
			fmt.Fprintf(w, "%s: %d model calls recorded\n", ep.Name, ep.Recorded)
		}
	}
	_, err := fmt.Fprintf(w, "%d session(s) per contract and locale (%s), up to %d turns each\n",
		r.Sessions, strings.Join(r.Locales, ", "), r.Turns)
	return err
}

func ms(p Percentiles) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f/%.0f ms", p.P50, p.P95)
}

// sortedCounts renders m as "a=1, b=2", keys in order.
func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
