package history

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestTagKeyMatchesPattern checks the hand-written tag-key check against the pattern it
// replaced, at the length bounds, with every byte class, and on random strings.
func TestTagKeyMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	inputs := []string{"", "a", "env", "build.id", "a-b_c.9", "a b", "a=b", "é", "a\n",
		strings.Repeat("k", 64), strings.Repeat("k", 65)}
	alphabet := []byte("aZ09_.- =\n\xc3\xa9")
	r := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		if got, want := tagKey(in), re.MatchString(in); got != want {
			t.Errorf("tagKey(%q) = %v; the pattern says %v", in, got, want)
		}
	}
}
