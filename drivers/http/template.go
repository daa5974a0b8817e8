package http

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// A template is a URL, body or check text with placeholders, compiled once at Init into
// literal and placeholder parts so that expanding it per request is appends into a reused
// buffer: no parsing, no map lookups, no allocation.
//
// Placeholders: {key}, {value} (the generated value, write operations), {value64} (the
// value in standard base64, for JSON bodies), {seq} (a counter of the driver's requests)
// and {op} (the operation's name). Any other brace text is literal, so a JSON body such
// as {"q":"{key}"} needs no escaping.
type template struct {
	parts []part
	// static is set when the template has no placeholder: its expansion is its text.
	static bool
	text   string
}

// part is a literal (ph == phNone) or a placeholder.
type part struct {
	lit string
	ph  placeholder
}

type placeholder uint8

const (
	phNone placeholder = iota
	phKey
	phValue
	phValue64
	phSeq
	phOp
)

var placeholders = map[string]placeholder{
	"{key}": phKey, "{value}": phValue, "{value64}": phValue64, "{seq}": phSeq, "{op}": phOp,
}

// compile splits s into literals and placeholders.
func compile(s string) template {
	t := template{text: s, static: true}
	lit := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		ph, ok := placeholders[s[i:i+j+1]]
		if !ok {
			continue
		}
		if lit < i {
			t.parts = append(t.parts, part{lit: s[lit:i]})
		}
		t.parts = append(t.parts, part{ph: ph})
		t.static = false
		i += j
		lit = i + 1
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{lit: s[lit:]})
	}
	return t
}

// uses reports whether the template has placeholder ph.
func (t template) uses(ph placeholder) bool {
	for _, p := range t.parts {
		if p.ph == ph {
			return true
		}
	}
	return false
}

// vars are one request's placeholder values.
type vars struct {
	key   string
	value []byte
	seq   uint64
	op    string
}

// expand appends t with v to dst. With escape set (URLs), key, value and op are
// percent-encoded except for RFC 3986's unreserved characters, so a key is one path
// segment or query value whatever bytes it holds.
func (t template) expand(dst []byte, v *vars, escape bool) []byte {
	if t.static {
		return append(dst, t.text...)
	}
	for _, p := range t.parts {
		switch p.ph {
		case phNone:
			dst = append(dst, p.lit...)
		case phKey:
			dst = appendText(dst, v.key, escape)
		case phValue:
			if escape {
				dst = appendEscaped(dst, v.value)
			} else {
				dst = append(dst, v.value...)
			}
		case phValue64:
			// Standard base64 has + and /, which a URL must escape.
			if escape {
				dst = appendEscaped(dst, base64.StdEncoding.AppendEncode(nil, v.value))
			} else {
				dst = base64.StdEncoding.AppendEncode(dst, v.value)
			}
		case phSeq:
			dst = strconv.AppendUint(dst, v.seq, 10)
		case phOp:
			dst = appendText(dst, v.op, escape)
		}
	}
	return dst
}

func appendText(dst []byte, s string, escape bool) []byte {
	if !escape {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		dst = appendEscapedByte(dst, s[i])
	}
	return dst
}

func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		dst = appendEscapedByte(dst, c)
	}
	return dst
}

const hexDigits = "0123456789ABCDEF"

func appendEscapedByte(dst []byte, c byte) []byte {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
		return append(dst, c)
	}
	return append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
}
