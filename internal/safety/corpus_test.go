package safety

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusDir is the evaluation corpus, kept at the repository root so the README can point at it.
const corpusDir = "../../testdata/safety"

// minRecall is the bar every language's positive set must clear. The corpus was written before
// the rules and keeps the cases the rules miss, so recall is reported as measured; the bar stops
// a rule change from quietly losing coverage.
const minRecall = 0.95

// minKindRecall is the bar of each class of crisis in each language (see TestCorpusByKind).
const minKindRecall = 0.85

type corpusCase struct {
	Text   string     `json:"text"`
	Kind   string     `json:"kind"`
	Expect []Category `json:"expect"`
}

func loadCorpus(t *testing.T, name string) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// score is one row of the precision/recall table.
type score struct {
	set                string
	positives, benign  int
	tp, fn, fp         int
	misses, falseAlarm []string
}

func (s score) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s score) recall() float64 {
	if s.positives == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.positives)
}

// evaluate screens every case: a positive counts as found when the verdict is a hit carrying
// every expected category (a pills overdose may also raise suicide; that is not a miss), and a
// benign case counts as a false positive when anything is raised.
func evaluate(t *testing.T, s *Screen, set, file string, stage Stage) score {
	sc := score{set: set}
	for _, c := range loadCorpus(t, file) {
		v, err := s.Check(context.Background(), Text{Stage: stage, Content: c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Expect) == 0 {
			sc.benign++
			if v.Crisis {
				sc.fp++
				sc.falseAlarm = append(sc.falseAlarm, fmt.Sprintf("%q raised %v (%v)", c.Text, v.Categories, v.Rules))
			}
			continue
		}
		sc.positives++
		found := v.Crisis
		for _, want := range c.Expect {
			found = found && v.Has(want)
		}
		if found {
			sc.tp++
		} else {
			sc.fn++
			sc.misses = append(sc.misses, fmt.Sprintf("[%s] %q: got %v, want %v", c.Kind, c.Text, v.Categories, c.Expect))
		}
	}
	return sc
}

// TestCorpusPrecisionRecall is the evaluation the README reports: per language and stage, the
// benign set raises nothing and recall clears minRecall, and the README and docs/safety.md show
// the table as measured. Run with -v to see the table.
func TestCorpusPrecisionRecall(t *testing.T) {
	s, err := NewScreen()
	if err != nil {
		t.Fatal(err)
	}
	rows := []score{
		evaluate(t, s, "en input", "en.jsonl", StageInput),
		evaluate(t, s, "es input", "es.jsonl", StageInput),
		evaluate(t, s, "en output", "output_en.jsonl", StageOutput),
		evaluate(t, s, "es output", "output_es.jsonl", StageOutput),
	}
	var table strings.Builder
	table.WriteString("| set | positives | benign | found | missed | false positives | precision | recall |\n")
	table.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d | %.2f | %.2f |\n",
			r.set, r.positives, r.benign, r.tp, r.fn, r.fp, r.precision(), r.recall())
	}
	t.Logf("built-in screen on testdata/safety:\n%s", table.String())
	// The README and the safety page show this table; a rule or corpus change that moves a
	// figure must move them too.
	for _, page := range []string{"../../README.md", "../../docs/safety.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), table.String()) {
			t.Errorf("%s does not show the evaluation as measured; want the table:\n%s", page, table.String())
		}
	}
	for _, r := range rows {
		for _, m := range r.misses {
			t.Logf("%s miss: %s", r.set, m)
		}
		for _, fa := range r.falseAlarm {
			t.Errorf("%s false positive: %s", r.set, fa)
		}
		if r.recall() < minRecall {
			t.Errorf("%s recall %.2f, want at least %.2f", r.set, r.recall(), minRecall)
		}
		if r.benign < 12 || r.positives < 8 {
			t.Errorf("%s has %d benign and %d positive cases: the corpus has lost cases", r.set, r.benign, r.positives)
		}
	}
}

// benignKinds are the kinds of case that must raise nothing: lesson talk of the anxiety module,
// and classroom questions about a topic (a character, history, debate, biology, a game, an idiom).
var benignKinds = map[string]bool{"benign": true, "topic": true}

// youthKinds are the kinds of crisis a school's learners write in their own way: slang,
// misspellings, laughter, plans, goodbyes, sexual abuse, neglect, eating disorders, and the
// colloquial and reflexive Spanish of teenagers.
var youthKinds = []string{"slang", "misspelling", "laughing", "plan", "goodbye", "sexual_abuse", "neglect", "eating"}

// TestCorpusCoversEveryKind keeps the corpus honest about what it claims to hold: every input
// language has each kind of signal, at least 40 benign lesson cases, 60 classroom topics, and
// 40 crisis cases of the kinds teenagers write.
func TestCorpusCoversEveryKind(t *testing.T) {
	kinds := append([]string{"direct", "passive", "indirect", "self_harm", "abuse", "danger", "friend", "benign", "topic"}, youthKinds...)
	for _, file := range []string{"en.jsonl", "es.jsonl"} {
		t.Run(file, func(t *testing.T) {
			count := map[string]int{}
			for _, c := range loadCorpus(t, file) {
				count[c.Kind]++
				if benignKinds[c.Kind] != (len(c.Expect) == 0) {
					t.Errorf("%q: kind %s with expect %v", c.Text, c.Kind, c.Expect)
				}
			}
			for _, k := range kinds {
				if count[k] == 0 {
					t.Errorf("no %s case", k)
				}
			}
			youth := count["colloquial"] + count["reflexive"]
			for _, k := range youthKinds {
				youth += count[k]
			}
			if count["benign"] < 40 || count["topic"] < 60 || youth < 40 {
				t.Errorf("got %d benign, %d topic and %d youth crisis cases, want at least 40, 60 and 40", count["benign"], count["topic"], youth)
			}
		})
	}
}

// TestCorpusByKind is the evaluation per class of case and language that the README and
// docs/safety.md show: every crisis kind found in full but for the cases listed in
// knownMisses, and every benign kind silent. Run with -v to see the table.
func TestCorpusByKind(t *testing.T) {
	s := newScreen(t)
	type cell struct{ cases, hits int }
	langs := []string{"en", "es"}
	byKind := map[string]map[string]*cell{}
	var order []string
	for _, lang := range langs {
		for _, c := range loadCorpus(t, lang+".jsonl") {
			if byKind[c.Kind] == nil {
				byKind[c.Kind] = map[string]*cell{}
				order = append(order, c.Kind)
			}
			cl := byKind[c.Kind][lang]
			if cl == nil {
				cl = &cell{}
				byKind[c.Kind][lang] = cl
			}
			cl.cases++
			v := s.check(StageInput, c.Text)
			found := v.Crisis
			for _, want := range c.Expect {
				found = found && v.Has(want)
			}
			if (benignKinds[c.Kind] && v.Crisis) || (!benignKinds[c.Kind] && found) {
				cl.hits++
			}
		}
	}
	var table strings.Builder
	table.WriteString("| class | en cases | en result | es cases | es result |\n")
	table.WriteString("|---|---|---|---|---|\n")
	for _, k := range order {
		fmt.Fprintf(&table, "| %s |", k)
		for _, lang := range langs {
			cl := byKind[k][lang]
			if cl == nil {
				table.WriteString(" 0 | - |")
				continue
			}
			word := "found"
			if benignKinds[k] {
				word = "raised"
			}
			fmt.Fprintf(&table, " %d | %d %s |", cl.cases, cl.hits, word)
			switch {
			case benignKinds[k] && cl.hits > 0:
				t.Errorf("%s %s: %d of %d raised, want none", lang, k, cl.hits, cl.cases)
			case !benignKinds[k] && float64(cl.hits) < minKindRecall*float64(cl.cases):
				t.Errorf("%s %s: found %d of %d, want at least %.0f%%", lang, k, cl.hits, cl.cases, 100*minKindRecall)
			}
		}
		table.WriteString("\n")
	}
	t.Logf("built-in screen per class on testdata/safety:\n%s", table.String())
	for _, page := range []string{"../../README.md", "../../docs/safety.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), table.String()) {
			t.Errorf("%s does not show the evaluation per class as measured; want the table:\n%s", page, table.String())
		}
	}
}
