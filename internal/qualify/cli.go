package qualify

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coachgw/coachgw/internal/config"
)

// DefaultMinSuccess is --min-success unless given: a contract whose turns end in a result the
// model wrote less than 8 times in 10 is not one an operator should put in front of learners.
const DefaultMinSuccess = 0.8

// ErrBelowBar is wrapped by Main's error when a contract on an endpoint succeeded less often
// than --min-success asks.
var ErrBelowBar = errors.New("below the bar")

// Main runs `coachgw qualify` with args (the words after "qualify"), the gateway's settings read
// through getenv as coachgw reads them, and the report written to stdout. Its error says what
// went wrong, or which contracts on which endpoints fell below --min-success.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	flags := flag.NewFlagSet("coachgw qualify", flag.ContinueOnError)
	flags.SetOutput(stdout)
	flags.Usage = func() {
		fmt.Fprintln(stdout, "usage: coachgw qualify [flags]\n\n"+
			"Drives scripted learner sessions of each contract, in English and Spanish, against each model\n"+
			"endpoint configured for coachgw (COACH_UPSTREAMS, OPENAI_BASE_URL, or the embedded replay\n"+
			"model), one endpoint at a time, and reports per contract and endpoint.\n\n"+
			"With --safety, measures instead the learner-safety screen and the judge behind it\n"+
			"(COACH_SAFETY_JUDGE_URL, or each model endpoint) on the safety corpus, and reports precision\n"+
			"and recall per language and kind of case.\n\nflags:")
		flags.PrintDefaults()
	}
	contracts := flags.String("contracts", strings.Join(Contracts, ","), "contracts to drive, comma-separated")
	locales := flags.String("locales", strings.Join(Locales, ","), "learner locales, comma-separated")
	endpoints := flags.String("endpoints", "", "only the endpoints of these names, comma-separated (default: all)")
	sessions := flags.Int("sessions", 2, "sessions per contract and locale")
	turns := flags.Int("turns", 6, "turns per session")
	module := flags.String("module", "", "learning module of module sessions (default: the first listed)")
	minSuccess := flags.Float64("min-success", DefaultMinSuccess, "exit non-zero when any contract on any endpoint has a lower success rate (0 to 1; 0: never)")
	record := flags.String("record", "", "keep the wire of every model call in `DIR`/<endpoint>/ as testdata/streams fixtures")
	asJSON := flags.Bool("json", false, "write the report as JSON")
	safetyRun := flags.Bool("safety", false, "measure the safety screen and judge on the corpus instead of driving sessions")
	corpus := flags.String("corpus", "", "the safety corpus `DIR` (default "+DefaultCorpus+", else "+DefaultImageCorpus+")")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *safetyRun {
		if flags.NArg() > 0 {
			return fmt.Errorf("qualify: unexpected arguments %q", flags.Args())
		}
		return mainSafety(ctx, *corpus, list(*endpoints), *asJSON, getenv, stdout)
	}
	switch {
	case flags.NArg() > 0:
		return fmt.Errorf("qualify: unexpected arguments %q", flags.Args())
	case *minSuccess < 0 || *minSuccess > 1:
		return fmt.Errorf("qualify: --min-success %v: want a rate from 0 to 1", *minSuccess)
	case *sessions < 1 || *turns < 1:
		return errors.New("qualify: --sessions and --turns must be at least 1")
	}
	opts := Options{
		Contracts: list(*contracts), Locales: list(*locales), Endpoints: list(*endpoints),
		Sessions: *sessions, Turns: *turns, Module: *module, RecordDir: *record,
	}
	for _, c := range opts.Contracts {
		if !slices.Contains(Contracts, c) {
			return fmt.Errorf("qualify: --contracts: no contract %q (want %s)", c, strings.Join(Contracts, ", "))
		}
	}
	for _, l := range opts.Locales {
		if !slices.Contains(Locales, l) {
			return fmt.Errorf("qualify: --locales: no scripted learner speaks %q (want %s)", l, strings.Join(Locales, ", "))
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	opts.Config = cfg
	rep, err := Run(ctx, opts)
	if err != nil {
		return fmt.Errorf("qualify: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteText(stdout, *minSuccess)
	}
	if err != nil {
		return err
	}
	if below := rep.Below(*minSuccess); len(below) > 0 {
		parts := make([]string, len(below))
		for i, r := range below {
			parts[i] = fmt.Sprintf("%s on %s %.2f", r.Contract, r.Endpoint, r.Success)
		}
		return fmt.Errorf("qualify: %w %.2f: %s", ErrBelowBar, *minSuccess, strings.Join(parts, "; "))
	}
	return nil
}

// list splits a comma-separated flag value, dropping blanks.
func list(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// mainSafety runs `coachgw qualify --safety`.
func mainSafety(ctx context.Context, corpus string, endpoints []string, asJSON bool, getenv func(string) string, stdout io.Writer) error {
	dir, err := ResolveCorpus(corpus)
	if err != nil {
		return fmt.Errorf("qualify: %w", err)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	rep, err := RunSafety(ctx, SafetyOptions{Config: cfg, Endpoints: endpoints, Corpus: dir})
	if err != nil {
		return fmt.Errorf("qualify: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(stdout)
}
