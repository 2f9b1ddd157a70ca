package coach

import (
	"encoding/json"
	"strings"
)

// Learner text that a prompt quotes goes between these lines, as JSON.
const (
	LearnerTextOpen  = "<learner_text>"
	LearnerTextClose = "</learner_text>"
)

// QuoteLearnerText returns learner text as a prompt quotes it: one JSON string on one line. The
// text cannot leave its quotes: quotes and backslashes are escaped, line breaks (U+2028 and
// U+2029 included) and control characters become escapes, and '<', '>', '&' and '#' become
// \u escapes, so that quoted text can neither close the LearnerTextClose block it sits in nor
// begin a heading such as "## Session facts" anywhere in the prompt.
func QuoteLearnerText(s string) string {
	b, err := json.Marshal(s) // escapes <, > and & as well
	if err != nil {
		panic(err) // a string always encodes
	}
	return strings.ReplaceAll(string(b), "#", `\u0023`)
}
