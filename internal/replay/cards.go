package replay

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// drill is one scenario and the cards of its cycle: scenario → prompt → insight →
// multiple_choice → reflection → insight.
type drill struct {
	phase, scenario     string
	prompt, placeholder string
	question            string
	options             []string
	// lesson is the point the insights of the cycle make.
	lesson string
}

// drills holds the scenarios of each level, 1 to 5. Higher levels add stakeholders, ambiguity
// and time pressure, as the level_up card promises.
var drills = [][]drill{
	{
		{
			phase:       "Problem-Solving",
			scenario:    "A teammate has missed the last two handoffs on a shared client report. The deadline is next Friday, and your manager hasn't noticed yet.",
			prompt:      "You have a 1:1 with your teammate this afternoon. How do you open the conversation?",
			placeholder: "Type what you would say...",
			question:    "What matters most in that first conversation?",
			options:     []string{"Finding out what is getting in their way", "Making sure the deadline is met", "Keeping the relationship friendly", "Having a record in case it happens again"},
			lesson:      "Opening with curiosity rather than accusation usually surfaces the real blocker faster.",
		},
		{
			phase:       "Executive Communication",
			scenario:    "Your manager asks for a one-paragraph status update on your project for the weekly leadership digest. The project is on track, but one vendor dependency is at risk.",
			prompt:      "Write the first two sentences of your update.",
			placeholder: "Type your update...",
			question:    "Where should the vendor risk appear?",
			options:     []string{"In the first sentence", "After the good news", "Nowhere until it is confirmed", "In a separate note to my manager"},
			lesson:      "Leaders want the headline and the risk together: burying a risk costs more trust than naming it early.",
		},
	},
	{
		{
			phase:       "Stakeholder Alignment",
			scenario:    "Sales has promised a customer a feature by the end of the quarter. Engineering says it is at least two quarters away. Both leads have asked you, the product manager, to \"sort it out\".",
			prompt:      "You are meeting both leads tomorrow. What do you propose as the goal of that meeting?",
			placeholder: "Type your proposal...",
			question:    "Whose concern do you address first?",
			options:     []string{"The customer's expectations", "Sales' credibility with the customer", "Engineering's capacity", "The company's roadmap priorities"},
			lesson:      "Alignment starts with a shared definition of the problem, not with picking a side.",
		},
		{
			phase:       "Problem-Solving",
			scenario:    "Your team's customer satisfaction score dropped eight points this month. Support blames a recent release; the release team blames a new support script. You have partial data for both.",
			prompt:      "Your director wants your read by the end of the day. What do you tell them?",
			placeholder: "Type your answer to the director...",
			question:    "What is the most useful thing to give your director?",
			options:     []string{"The most likely cause, named now", "An honest \"too early to tell\"", "Both hypotheses and a plan to test them", "A request for another week"},
			lesson:      "Under uncertainty, a clear hypothesis with a test plan beats both false certainty and silence.",
		},
	},
	{
		{
			phase:       "Decision-Making Under Pressure",
			scenario:    "Two days before launch, QA finds a bug that affects 3% of users in a rare configuration. Marketing has a press embargo lifting on launch day, and your CTO is travelling and hard to reach.",
			prompt:      "You must recommend shipping, delaying, or shipping with a mitigation. Write your recommendation to the launch channel.",
			placeholder: "Type your recommendation...",
			question:    "What should weigh most in this decision?",
			options:     []string{"The impact on the affected 3% of users", "The press commitment", "Team morale after months of work", "How reversible each option is"},
			lesson:      "When a decision is urgent and the facts are incomplete, ask which option is easiest to reverse; it is often the one to take.",
		},
		{
			phase:       "Executive Communication",
			scenario:    "In a quarterly review, the CFO questions your team's budget, saying its return is not visible. Your VP is in the room but stays silent. You have three minutes.",
			prompt:      "What do you say in your first thirty seconds?",
			placeholder: "Type your opening...",
			question:    "What is the CFO really asking for?",
			options:     []string{"A budget cut", "Evidence of value in financial terms", "Reassurance that someone is in control", "A reason to trust your judgment"},
			lesson:      "Translate your work into the listener's metric: for a CFO, that is money earned, saved or put at risk.",
		},
	},
	{
		{
			phase:       "Stakeholder Alignment",
			scenario:    "A reorganisation merges your team with a peer's. The teams run different processes, two senior engineers are threatening to quit, HR wants a plan by Monday, and your new boss has not decided who leads what.",
			prompt:      "Write the message you send to both teams today.",
			placeholder: "Type your message to both teams...",
			question:    "What is your first move?",
			options:     []string{"Meet the two engineers one to one", "Propose a joint process to my new boss", "Hold an all-hands to address the rumours", "Agree on roles with my peer first"},
			lesson:      "In an ambiguous reorganisation, people need clarity about what will not change before they can accept what will.",
		},
		{
			phase:       "Problem-Solving",
			scenario:    "A key client escalates to your CEO over a missed service-level agreement. Your operations lead says the client changed requirements without notice; account management says operations is making excuses. The CEO wants one answer within the hour.",
			prompt:      "Draft the one-paragraph answer you send the CEO.",
			placeholder: "Type your answer to the CEO...",
			question:    "What should lead your answer?",
			options:     []string{"Your teams' side of the story", "Ownership of the miss and a concrete fix", "Both positions, laid out neutrally", "A request for time to investigate"},
			lesson:      "An executive facing an angry client needs ownership and a next step first; the root-cause debate can follow.",
		},
	},
	{
		{
			phase:       "Decision-Making Under Pressure",
			scenario:    "A data incident may have exposed customer records. Legal wants silence until the investigation ends, security needs 48 hours, the board chair is calling, and a journalist wants a comment by 5 p.m. today.",
			prompt:      "You have ten minutes with the CEO. What do you recommend, and why?",
			placeholder: "Type your recommendation...",
			question:    "Which move protects the company best right now?",
			options:     []string{"Saying nothing until the facts are confirmed", "Issuing a holding statement now", "Notifying affected customers immediately", "Briefing the board first, then deciding"},
			lesson:      "In a crisis, a fast and honest acknowledgement protects trust more than complete information delivered late.",
		},
		{
			phase:       "Executive Communication",
			scenario:    "You are presenting a strategy pivot to the board. Halfway through, a board member says the plan contradicts what the CEO told them last quarter. The CEO looks at you, and your two largest investors are on the call.",
			prompt:      "What do you say next?",
			placeholder: "Type what you say to the board...",
			question:    "How do you handle the contradiction?",
			options:     []string{"Defer to the CEO", "Name the change and the evidence that drove it", "Explain that last quarter's remark was taken out of context", "Offer to follow up offline"},
			lesson:      "A changed position is credible when you name the change and the evidence behind it instead of defending consistency.",
		},
	},
}

// cards answers a drill turn with display_card arguments. The last_card fact says which card
// comes next, except after an insight: the history tells whether it closed the prompt half of the
// cycle (multiple choice next) or the reflection half (a new scenario next).
func cards(c *conv) object {
	level, _ := strconv.Atoi(c.fact("level"))
	level = min(max(level, 1), len(drills))
	bank := drills[level-1]
	msg := strings.TrimSpace(c.last())
	seed := c.seed("cards")

	lastCard := c.fact("last_card")
	next := "scenario"
	switch lastCard {
	case "scenario":
		next = "prompt"
	case "prompt", "reflection":
		next = "insight"
	case "multiple_choice":
		next = "reflection"
	case "insight":
		// The insight after a reflection answers the message right after a selection.
		if _, ok := selection(c.before(2)); !ok {
			next = "multiple_choice"
		}
	}
	// Past the first insight the contract has counted it; past the selection the history has it.
	afterInsight := next == "multiple_choice" || next == "reflection" || lastCard == "reflection"
	afterSelection := next == "reflection" || lastCard == "reflection"
	d := bank[c.cycle(afterInsight, afterSelection)%len(bank)]

	switch {
	case next == "prompt":
		return card("prompt", d.prompt, d.phase, 500, d.placeholder, nil)
	case next == "multiple_choice":
		opts := make([]object, len(d.options))
		for i, label := range d.options {
			opts[i] = object{{"id", string(rune('a' + i))}, {"label", label}}
		}
		return card("multiple_choice", d.question, d.phase, 0, "", opts)
	case next == "reflection":
		return card("reflection", reflectionPrompt(msg, d, seed), d.phase, 200,
			pick(seed>>8, "Be honest with yourself...", "A sentence or two is enough...", "What was really going on for you?"), nil)
	case next == "insight" && afterSelection:
		return card("insight", reflectionInsight(msg, d, seed), d.phase, 0, "", nil)
	case next == "insight":
		return card("insight", promptInsight(msg, d, seed), d.phase, 0, "", nil)
	}
	return card("scenario", d.scenario, d.phase, 0, "", nil)
}

// cycle returns how many scenario cycles were done at this level before the current one, which
// picks the scenario and keeps every card of a cycle about the same scenario. The cards contract
// counts a practice cycle each time an insight answers a prompt or a reflection, so one scenario
// cycle counts two, the first of them once the cycle's first insight is out (afterInsight).
// Without that fact the selections in the history count the cycles instead, the current cycle's
// own once it is made (afterSelection); the history may be cut short, so that is a fallback.
func (c *conv) cycle(afterInsight, afterSelection bool) int {
	if n, err := strconv.Atoi(c.fact("cycles_at_level")); err == nil && n >= 0 {
		if afterInsight {
			n--
		}
		return max(n, 0) / 2
	}
	done := 0
	for _, u := range c.users {
		if _, ok := selection(u); ok {
			done++
		}
	}
	if afterSelection {
		done--
	}
	return max(done, 0)
}

// card builds display_card arguments with card_type and content first, as the cards contract
// streams content.
func card(kind, content, phase string, maxLength int, placeholder string, options []object) object {
	o := object{{"card_type", kind}, {"content", content}}
	if maxLength > 0 {
		o = append(o, field{"input_config", object{{"max_length", maxLength}, {"placeholder", placeholder}}})
	}
	if options != nil {
		o = append(o, field{"options", options})
	}
	o = append(o, field{"drill_phase", phase})
	if maxLength > 0 {
		o = append(o, field{"is_iteration", false})
	}
	return o
}

var selectedPattern = regexp.MustCompile(`(?i)"?selected"?\s*[:=]\s*"?([a-z0-9]+)`)

// selection returns the option id of a multiple-choice answer such as {"selected": "b"}.
func selection(msg string) (string, bool) {
	var v struct {
		Selected *string `json:"selected"`
	}
	if json.Unmarshal([]byte(msg), &v) == nil && v.Selected != nil {
		return *v.Selected, true
	}
	if m := selectedPattern.FindStringSubmatch(msg); m != nil {
		return strings.ToLower(m[1]), true
	}
	return "", false
}

// promptInsight reflects the learner's answer back with one observation about how it was written
// and the scenario's lesson.
func promptInsight(answer string, d drill, seed uint64) string {
	if len(words(answer)) == 0 {
		return "You didn't commit to an answer this time, and that is information too. " + d.lesson
	}
	open := pick(seed, "Notice how you began: \u201c%s\u201d.", "Look at your opening: \u201c%s\u201d.", "You led with: \u201c%s\u201d.")
	open = strings.Replace(open, "%s", snippet(answer, 12), 1)
	return open + " " + observe(answer, seed) + " " + d.lesson
}

// observe names one thing about how an answer is written, the most telling first.
func observe(answer string, seed uint64) string {
	n := len(words(answer))
	switch {
	case hasWord(answer, "sorry", "apologize", "apologise", "apologies"):
		return "You opened with an apology, which signals accountability but can also cede ground before the facts are on the table."
	case strings.Contains(answer, "?"):
		return "You asked a question, which invites dialogue; check whether it also moves the situation forward."
	case hasWord(answer, "maybe", "might", "perhaps", "hopefully", "try", "think"):
		return "Your hedging words soften the message; under pressure, listeners tend to hear them as uncertainty."
	case hasWord(answer, "today", "tomorrow", "eod", "by", "will", "friday", "monday", "hour", "minutes"):
		return "You committed to something concrete, which gives people a reason to trust the next step."
	case n < 12:
		return "You kept it short, which respects people's time; make sure the one thing they need is in there."
	case n > 60:
		return "You wrote a lot; the more you explain, the harder it is for the key point to land."
	case hasWord(answer, "we", "us", "our", "team"):
		return "You framed it as a shared problem, which lowers defensiveness."
	}
	return pick(seed>>4,
		"You went straight to the point, which makes your priority easy to read.",
		"Your answer shows what you are optimising for, whether you meant it to or not.")
}

// reflectionPrompt asks why the learner chose the option they chose.
func reflectionPrompt(msg string, d drill, seed uint64) string {
	id, ok := selection(msg)
	i := -1
	if ok && len(id) == 1 {
		i = int(id[0] - 'a')
	}
	if i < 0 || i >= len(d.options) {
		return pick(seed, "What made that feel like the right answer in the moment?", "Why did that answer feel safer than the alternatives?")
	}
	return "You chose \u201c" + d.options[i] + "\u201d. " + pick(seed,
		"Why did that feel like the right priority in this moment?",
		"What made that option feel safer than the others?",
		"What would you have lost by choosing differently?")
}

// reflectionInsight closes a cycle by connecting the learner's reflection to the lesson.
func reflectionInsight(answer string, d drill, seed uint64) string {
	start := "That's the pattern worth noticing."
	if len(words(answer)) > 0 {
		start = "You said: \u201c" + snippet(answer, 10) + "\u201d. " + pick(seed, "That's the pattern worth noticing.", "That awareness is the skill.", "Hold on to that.")
	}
	return start + " " + d.lesson + " " + pick(seed>>8,
		"Next time, pause and ask what you are optimising for before you respond.",
		"Carry that into the next scenario.")
}
