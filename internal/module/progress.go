package module

import (
	"slices"
	"strconv"
)

// Milestones are the coverage fractions worth celebrating, in percent.
var milestones = [...]int{25, 50, 75, 100}

// milestoneName returns the wire name of a milestone, e.g. "25%".
func milestoneName(pct int) string { return strconv.Itoa(pct) + "%" }

// coverage is which topics of a module a learner has covered.
type coverage struct {
	m       *Module
	covered []bool
	n       int
}

// newCoverage returns the coverage of ids; ids the module does not have (say, a topic removed
// from the module file since the session began) are dropped.
func newCoverage(m *Module, ids []string) *coverage {
	c := &coverage{m: m, covered: make([]bool, len(m.topics))}
	c.add(ids)
	return c
}

func (c *coverage) clone() *coverage {
	return &coverage{m: c.m, covered: slices.Clone(c.covered), n: c.n}
}

// add marks ids covered and returns those that were not covered before.
func (c *coverage) add(ids []string) (added []string) {
	for _, id := range ids {
		if i, ok := c.m.byID[id]; ok && !c.covered[i] {
			c.covered[i] = true
			c.n++
			added = append(added, id)
		}
	}
	return added
}

// ids returns the covered topic ids in module order.
func (c *coverage) ids() []string {
	out := make([]string, 0, c.n)
	for i, ok := range c.covered {
		if ok {
			out = append(out, c.m.topics[i].ID)
		}
	}
	return out
}

// since returns the ids covered now but not in old, in module order.
func (c *coverage) since(old *coverage) []string {
	out := []string{}
	for i, ok := range c.covered {
		if ok && !old.covered[i] {
			out = append(out, c.m.topics[i].ID)
		}
	}
	return out
}

// remaining returns the topics not covered yet, in module order.
func (c *coverage) remaining() []*Topic {
	var out []*Topic
	for i, ok := range c.covered {
		if !ok {
			out = append(out, c.m.topics[i])
		}
	}
	return out
}

// percentage returns covered/total as an integer percentage, rounded half up, except that it is
// 100 only when every topic is covered: "100%" must never show while a topic remains.
func (c *coverage) percentage() int {
	total := len(c.covered)
	p := (c.n*200 + total) / (2 * total)
	if p == 100 && c.n < total {
		p = 99
	}
	return p
}

// newMilestones returns the milestones this coverage has reached that are not in reached,
// lowest first. A milestone is reached when the exact covered fraction (not the rounded
// percentage) is at least its threshold.
func (c *coverage) newMilestones(reached []string) []string {
	var out []string
	for _, pct := range milestones {
		name := milestoneName(pct)
		if c.n*100 >= pct*len(c.covered) && !slices.Contains(reached, name) {
			out = append(out, name)
		}
	}
	return out
}
