package qualify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/moderation"
	"github.com/coachgw/coachgw/internal/redact"
	"github.com/coachgw/coachgw/internal/replay"
	"github.com/coachgw/coachgw/internal/safety"
)

// Where `coachgw qualify --safety` finds the corpus when --corpus is not given: the
// repository's, from a checkout, else the copy the container image carries.
const (
	DefaultCorpus      = "testdata/safety"
	DefaultImageCorpus = "/usr/share/coachgw/safety"
)

// safetyParallel is how many corpus cases are checked at once: enough to measure a remote
// judge in reasonable time, few enough not to trip an operator's rate limit.
const safetyParallel = 4

// SafetyOptions configure a `qualify --safety` run.
type SafetyOptions struct {
	// Config is the gateway's configuration: COACH_SAFETY_JUDGE* choose the judge, and its model
	// endpoints are the judges measured when COACH_SAFETY_JUDGE_URL is not set.
	Config config.Config
	// Endpoints, when set, limits the run to the endpoints of these names.
	Endpoints []string
	// Corpus is the directory of the learner-input corpus: every <lang>.jsonl in it (the
	// output_*.jsonl files of model output are not a learner's input and are skipped).
	Corpus string
}

// SafetyReport is a run's outcome per judge, language and kind of case.
type SafetyReport struct {
	Corpus string         `json:"corpus"`
	Judges []JudgeReport  `json:"judges"`
	Cases  map[string]int `json:"cases"`
}

// JudgeReport is the corpus measured with one judge behind the screen.
type JudgeReport struct {
	// Name is the endpoint's name, "judge" for COACH_SAFETY_JUDGE_URL, or "off" (the screen alone).
	Name  string `json:"name"`
	URL   string `json:"url,omitempty"`
	Model string `json:"model,omitempty"`
	// Rows are per language and kind, then one per language with kind "all".
	Rows []SafetyRow `json:"rows"`
	// Calls are the judge's checks, Errors those that failed (COACH_SAFETY_FAILURE then
	// decided), Latency their time in milliseconds.
	Calls   int         `json:"judgeCalls"`
	Errors  int         `json:"judgeErrors"`
	Latency Percentiles `json:"judgeLatencyMs"`
}

// SafetyRow is one language and kind of the corpus: how the screen alone and the screen with
// the judge behind it decided its cases. A case is positive when the corpus expects a category,
// and flagged when the decision is a crisis (the crisis protocol, or the supportive answer of
// "other"); a benign case flagged is a false positive.
type SafetyRow struct {
	Lang      string `json:"lang"`
	Kind      string `json:"kind"`
	Cases     int    `json:"cases"`
	Positives int    `json:"positives"`
	Screen    Score  `json:"screen"`
	Judged    Score  `json:"screenAndJudge"`
}

// Score is the confusion counts of one decision over a set of cases, with precision and recall
// (null when undefined: nothing flagged, or no positive case).
type Score struct {
	TP        int      `json:"truePositives"`
	FP        int      `json:"falsePositives"`
	FN        int      `json:"falseNegatives"`
	Precision *float64 `json:"precision"`
	Recall    *float64 `json:"recall"`
}

func (s *Score) add(positive, flagged bool) {
	switch {
	case positive && flagged:
		s.TP++
	case positive:
		s.FN++
	case flagged:
		s.FP++
	}
}

func (s *Score) finish() {
	if s.TP+s.FP > 0 {
		p := float64(s.TP) / float64(s.TP+s.FP)
		s.Precision = &p
	}
	if s.TP+s.FN > 0 {
		r := float64(s.TP) / float64(s.TP+s.FN)
		s.Recall = &r
	}
}

// corpusCase is one line of the corpus; fields the run does not read are ignored, so that the
// corpus can grow fields without breaking it.
type corpusCase struct {
	Text   string   `json:"text"`
	Kind   string   `json:"kind"`
	Expect []string `json:"expect"`
	lang   string
}

// ResolveCorpus returns dir, or when it is empty the first of DefaultCorpus and
// DefaultImageCorpus that exists.
func ResolveCorpus(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	for _, d := range []string{DefaultCorpus, DefaultImageCorpus} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("no safety corpus in %s or %s: name one with --corpus DIR", DefaultCorpus, DefaultImageCorpus)
}

// loadCorpus reads every learner-input file of dir.
func loadCorpus(dir string) ([]corpusCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var cases []corpusCase
	for _, f := range files {
		lang := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if strings.HasPrefix(lang, "output_") {
			continue
		}
		got, err := readCases(f, lang)
		if err != nil {
			return nil, err
		}
		cases = append(cases, got...)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s holds no learner-input cases (<lang>.jsonl)", dir)
	}
	return cases, nil
}

func readCases(file, lang string) ([]corpusCase, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Kind == "" {
			return nil, fmt.Errorf("%s:%d: want {\"text\", \"kind\", \"expect\"}", file, n)
		}
		c.lang = lang
		out = append(out, c)
	}
	return out, sc.Err()
}

// judgeTarget is one judge to measure.
type judgeTarget struct {
	name string
	opts moderation.Options
	off  bool
}

// judgeTargets returns the judges of cfg as the gateway would use them: none when
// COACH_SAFETY_JUDGE=off; COACH_SAFETY_JUDGE_URL when set; else each model endpoint (the
// gateway uses the first; each is measured so that an operator can choose), the embedded
// replay model when none is configured (started by the caller: its URL is empty here).
func judgeTargets(cfg config.Config, only []string) ([]judgeTarget, error) {
	base := moderation.Options{ConnectTimeout: cfg.ConnectTimeout, Timeout: cfg.SafetyTimeout}
	switch {
	case cfg.SafetyJudge == "off":
		return []judgeTarget{{name: "off", off: true}}, nil
	case cfg.SafetyJudgeURL != "":
		o := base
		o.BaseURL, o.Model, o.APIKey = cfg.SafetyJudgeURL, cfg.SafetyJudgeModel, cfg.SafetyJudgeAPIKey
		return []judgeTarget{{name: "judge", opts: o}}, nil
	}
	var ts []judgeTarget
	add := func(name, url, model, key string) {
		if len(only) > 0 && !slices.Contains(only, name) {
			return
		}
		o := base
		o.BaseURL, o.Model, o.APIKey = url, model, key
		if cfg.SafetyJudgeModel != "" {
			o.Model = cfg.SafetyJudgeModel
		}
		ts = append(ts, judgeTarget{name: name, opts: o})
	}
	switch {
	case len(cfg.Upstreams) > 0:
		for _, u := range cfg.Upstreams {
			add(u.Name, u.BaseURL, u.Model, u.APIKey)
		}
	case cfg.OpenAIBaseURL != "":
		add("default", cfg.OpenAIBaseURL, cfg.Model, cfg.OpenAIAPIKey)
	default:
		add("replay", "", "coachgw-replay", "")
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no configured endpoint is named %v", only)
	}
	return ts, nil
}

// RunSafety measures the screen, and the screen with each judge behind it, on the corpus.
func RunSafety(ctx context.Context, opts SafetyOptions) (*SafetyReport, error) {
	cases, err := loadCorpus(opts.Corpus)
	if err != nil {
		return nil, err
	}
	targets, err := judgeTargets(opts.Config, opts.Endpoints)
	if err != nil {
		return nil, err
	}
	screen, err := safety.NewScreen()
	if err != nil {
		return nil, err
	}
	rep := &SafetyReport{Corpus: opts.Corpus, Cases: map[string]int{}}
	for _, c := range cases {
		rep.Cases[c.lang]++
	}
	for _, tg := range targets {
		jr, err := measure(ctx, opts.Config, screen, tg, cases)
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", tg.name, err)
		}
		rep.Judges = append(rep.Judges, *jr)
	}
	return rep, nil
}

// measure decides every case with the screen and with tg behind it, as a turn in enforce mode
// would, and tallies the decisions per language and kind.
func measure(ctx context.Context, cfg config.Config, screen *safety.Screen, tg judgeTarget, cases []corpusCase) (*JudgeReport, error) {
	g := &safety.Guard{Mode: safety.ModeEnforce, Screen: screen, Failure: safety.Failure(cfg.SafetyFailure), Timeout: cfg.SafetyTimeout}
	jr := &JudgeReport{Name: tg.name}
	if !tg.off {
		o := tg.opts
		if o.BaseURL == "" {
			_, base, stop, err := fakellm.Start(fakellm.Options{Responder: replay.Responder(), Model: "coachgw-replay"})
			if err != nil {
				return nil, fmt.Errorf("starting the embedded replay model: %w", err)
			}
			defer stop()
			o.BaseURL = base
		}
		// No cache: every case is a new text, and a measurement must ask every time.
		j := moderation.NewJudge(moderation.JudgeOptions{Options: o, TTL: -1, MaskPII: cfg.PIIRedact == "mask"})
		g.Judge = safety.NamedClassifier{Name: j.Name(), Classifier: j}
		jr.URL, jr.Model = redact.URL(o.BaseURL), o.Model
	}
	type decision struct{ screen, judged bool }
	got := make([]decision, len(cases))
	var (
		mu      sync.Mutex
		latency []time.Duration
		wg      sync.WaitGroup
		next    = make(chan int)
	)
	for range safetyParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := cases[i]
				t := safety.Text{Stage: safety.StageInput, Locale: c.lang, Content: c.Text, Tenant: "qualify"}
				sv, _ := g.CheckScreen(t)
				v, checks := g.Check(ctx, t)
				got[i] = decision{screen: sv.Crisis, judged: v.Crisis}
				mu.Lock()
				for _, ch := range checks {
					if ch.Classifier == g.Judge.Name && g.Judge.Classifier != nil {
						jr.Calls++
						latency = append(latency, ch.Latency)
						if ch.NotRun != "" {
							jr.Errors++
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range cases {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	jr.Latency = percentiles(latency)
	jr.Rows = tallySafety(cases, func(i int) (bool, bool) { return got[i].screen, got[i].judged })
	return jr, nil
}

// tallySafety returns the rows per language and kind, each language's kinds in order and then its
// "all" row.
func tallySafety(cases []corpusCase, decided func(i int) (screen, judged bool)) []SafetyRow {
	type key struct{ lang, kind string }
	rows := map[key]*SafetyRow{}
	row := func(k key) *SafetyRow {
		r, ok := rows[k]
		if !ok {
			r = &SafetyRow{Lang: k.lang, Kind: k.kind}
			rows[k] = r
		}
		return r
	}
	for i, c := range cases {
		positive := len(c.Expect) > 0
		s, j := decided(i)
		for _, k := range []key{{c.lang, c.Kind}, {c.lang, "all"}} {
			r := row(k)
			r.Cases++
			if positive {
				r.Positives++
			}
			r.Screen.add(positive, s)
			r.Judged.add(positive, j)
		}
	}
	keys := make([]key, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.lang, b.lang); c != 0 {
			return c
		}
		if (a.kind == "all") != (b.kind == "all") {
			if a.kind == "all" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.kind, b.kind)
	})
	out := make([]SafetyRow, len(keys))
	for i, k := range keys {
		r := rows[k]
		r.Screen.finish()
		r.Judged.finish()
		out[i] = *r
	}
	return out
}

// WriteText writes the report as one table per judge.
func (r *SafetyReport) WriteText(w io.Writer) error {
	for _, j := range r.Judges {
		title := "screen alone (COACH_SAFETY_JUDGE=off)"
		if j.Name != "off" {
			title = fmt.Sprintf("judge %s (%s at %s)", j.Name, j.Model, j.URL)
		}
		fmt.Fprintf(w, "safety corpus %s, %s\n", r.Corpus, title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "lang\tkind\tcases\tpositives\tscreen TP\tFP\tprecision\trecall\t+judge TP\tFP\tprecision\trecall\t")
		for _, row := range j.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t\n", row.Lang, row.Kind, row.Cases, row.Positives,
				row.Screen.TP, row.Screen.FP, rate(row.Screen.Precision), rate(row.Screen.Recall),
				row.Judged.TP, row.Judged.FP, rate(row.Judged.Precision), rate(row.Judged.Recall))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if j.Name != "off" {
			fmt.Fprintf(w, "judge calls %d, errors %d, latency %s\n", j.Calls, j.Errors, ms(j.Latency))
		}
	}
	return nil
}

func rate(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *p)
}
