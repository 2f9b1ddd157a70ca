package extract_test

import (
	"fmt"

	"github.com/coachgw/coachgw/internal/extract"
)

// relay streams the root assistantText to the client and captures the root
// step.
type relay struct{}

func (relay) Match(p extract.Path) (int, extract.Action) {
	switch {
	case len(p) == 1 && p[0].Is("assistantText"):
		return 1, extract.Stream
	case len(p) == 1 && p[0].Is("step"):
		return 2, extract.Capture
	}
	return 0, extract.Skip
}

func (relay) Text(_ int, _ extract.Path, text []byte) { fmt.Printf("text %q\n", text) }

func (relay) End(id int, _ extract.Path, value []byte) {
	if id == 2 {
		fmt.Printf("step %q\n", value)
	}
}

func Example() {
	e := extract.New(relay{})
	for _, chunk := range []string{`{"step":"cl`, `aim","meta":{"assistantText":"no"},`, `"assistantText":"Caf`, `\u00e9 `, `time"}`} {
		if err := e.Write([]byte(chunk)); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("close:", e.Close())
	// Output:
	// step "claim"
	// text "Caf"
	// text "é"
	// text " "
	// text "time"
	// close: <nil>
}
