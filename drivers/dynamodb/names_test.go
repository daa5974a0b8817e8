package dynamodb

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestNameOfMatchesPattern checks the hand-written name check against the patterns it
// replaced (DynamoDB's documented name rules), at the length bounds, with every byte
// class, and on random strings.
func TestNameOfMatchesPattern(t *testing.T) {
	cases := []struct {
		min, max int
		re       *regexp.Regexp
	}{
		{3, 255, regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)},
		{1, 255, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,255}$`)},
		{0, 253, regexp.MustCompile(`^[A-Za-z0-9_.-]{0,253}$`)},
	}
	inputs := []string{"", "a", "ab", "abc", "a-b.c_D9", "a b", "ab/c", "ab\n", "\nab", "é12", "ab\x00",
		strings.Repeat("x", 253), strings.Repeat("x", 254), strings.Repeat("x", 255), strings.Repeat("x", 256)}
	alphabet := []byte("aZ09_.- /\n\xc3\xa9:@")
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, c := range cases {
		for _, in := range inputs {
			if got, want := nameOf(in, c.min, c.max), c.re.MatchString(in); got != want {
				t.Errorf("nameOf(%q, %d, %d) = %v; the pattern %s says %v", in, c.min, c.max, got, c.re, want)
			}
		}
	}
}
