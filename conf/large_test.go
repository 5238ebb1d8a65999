package conf

import (
	"strings"
	"testing"
)

// TestLargeInputs checks that dense but valid inputs stay within the
// lexer's progress budget and parse quickly.
func TestLargeInputs(t *testing.T) {
	const n = 20000
	inputs := map[string]string{
		"empty maps":     strings.Repeat("a{}\n", n),
		"glued maps":     strings.Repeat("a{};", n),
		"array of maps":  "a [" + strings.Repeat("{},", n) + "]",
		"nested arrays":  "a " + strings.Repeat("[", 100) + strings.Repeat("]", 100),
		"empty arrays":   "a [" + strings.Repeat("[],", n) + "]",
		"short entries":  strings.Repeat("a=1,", n),
		"variables":      "v 1\n" + strings.Repeat("x $v;", n),
		"realistic many": strings.Repeat(realisticConfig, 200),
	}
	for name, in := range inputs {
		if _, err := Parse(in); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func BenchmarkParseRealistic(b *testing.B) {
	for b.Loop() {
		if _, err := Parse(realisticConfig); err != nil {
			b.Fatal(err)
		}
	}
}
