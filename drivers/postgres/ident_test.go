package postgres

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestIdentMatchesPattern checks the hand-written identifier check against the pattern it
// replaced, at the length bound, with every byte class, and on random strings.
func TestIdentMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
	inputs := []string{"", "a", "_", "9", "a9", "_9", "9a", "ndbench", "nd bench", "nd-bench", "nd;x", "é",
		"a\n", strings.Repeat("a", 63), strings.Repeat("a", 64), "_" + strings.Repeat("9", 62)}
	alphabet := []byte("aZ_09 .-;\n\xc3\xa9\"")
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		if got, want := ident(in), re.MatchString(in); got != want {
			t.Errorf("ident(%q) = %v; the pattern says %v", in, got, want)
		}
	}
}
