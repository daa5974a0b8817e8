package elasticsearch

import (
	"encoding/base64"
	"math/rand/v2"
)

// appendDoc appends the document of key and value: {"key":K,"value":BASE64} and, with
// document=words, "text" with the key's title word first and random words after it. The
// value is base64 (the binary field type), so every byte comes back as written and data
// validation works.
func (d *Driver) appendDoc(b []byte, key string, value []byte) []byte {
	b = append(b, `{"key":`...)
	b = appendString(b, key)
	b = append(b, `,"value":"`...)
	b = base64.StdEncoding.AppendEncode(b, value)
	b = append(b, '"')
	if d.opts.Document == "words" {
		b = append(b, `,"text":"`...)
		b = append(b, titleWord(key, d.opts.RandomizeStrings)...)
		for range d.opts.Words - 1 {
			b = append(b, ' ')
			b = appendWord(b, rand.Uint64(), d.opts.RandomizeStrings)
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// titleWord is the first word of key's text: what searchType=match looks for, so a
// match search for a written key always has that document among its hits. It is the same
// in every process, so a search finds documents another node (or an earlier run) wrote.
func titleWord(key string, randomize bool) string {
	return string(appendWord(nil, fnv64(key), randomize))
}

// fnv64 is FNV-1a: a hash that is stable across processes.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// dictionary holds the stems of NDBench's fake words (dog-ab, cat-xy, ...): with
// randomizeStrings=false every word is a stem and two letters, 26*26*len(dictionary)
// words in all, so terms repeat as in natural language.
var dictionary = [...]string{"dog", "cat", "sun", "map", "key", "sea", "ink", "owl", "fox", "jam",
	"bee", "cup", "elm", "fig", "gem", "hat", "ivy", "kit", "log", "nut"}

// appendWord appends the word that r picks: 4 to 10 random lowercase letters, or a
// dictionary word.
func appendWord(b []byte, r uint64, randomize bool) []byte {
	if !randomize {
		b = append(b, dictionary[r%uint64(len(dictionary))]...)
		r /= uint64(len(dictionary))
		return append(b, '-', byte('a'+r%26), byte('a'+(r/26)%26))
	}
	n := 4 + int(r%7)
	r /= 7
	for range n {
		b = append(b, byte('a'+r%26))
		r /= 26
		if r == 0 {
			r = fnv64(string(b)) // more letters than the 64 bits gave
		}
	}
	return b
}
