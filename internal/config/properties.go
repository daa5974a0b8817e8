package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// ParseProperties parses a Java .properties document (java.util.Properties.load rules):
// `key=value`, `key: value` and `key value` pairs; lines starting with '#' or '!' are
// comments; a line ending in an odd number of backslashes continues on the next line (whose
// leading blanks are dropped); `\t \n \r \f \uXXXX` escapes, and a backslash before any other
// character keeps that character (so `\=`, `\:`, `\ ` and `\\` are literal). A later
// duplicate key wins, as in Java.
func ParseProperties(text string) (map[string]string, error) {
	out, _, err := ParsePropertiesLines(text)
	return out, err
}

// ParsePropertiesLines is ParseProperties that also returns, per key, the 1-based line its
// (last) definition starts on, so that errors about a value can point at it.
func ParsePropertiesLines(text string) (map[string]string, map[string]int, error) {
	out := map[string]string{}
	at := map[string]int{}
	lines := splitNaturalLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1 // 1-based number of the logical line's first natural line
		line := trimLeftBlank(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue // comments and blank lines never continue
		}
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + trimLeftBlank(lines[i])
		}
		if continues(line) { // a continuation at end of input ends the line
			line = line[:len(line)-1]
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", start, err)
		}
		out[key] = value
		at[key] = start
	}
	return out, at, nil
}

// InlineComment returns the part of a .properties value that looks like an inline comment
// (`20000000 # Backfill keys` gives `# Backfill keys`): a '#' or '!' after a blank. Java has
// no inline comments, so that text is part of the value; callers use this only to explain
// why the value was rejected, never to strip it (that would diverge from NDBench).
func InlineComment(value string) (string, bool) {
	for i := 1; i < len(value); i++ {
		if (value[i] == '#' || value[i] == '!') && isBlank(value[i-1]) {
			return value[i:], true
		}
	}
	return "", false
}

// splitNaturalLines splits on \n, \r and \r\n, the terminators Java accepts.
func splitNaturalLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its unescaped key and value. The key ends at
// the first unescaped '=', ':' or blank; blanks around the separator are skipped, and the
// value keeps trailing blanks, as Java does.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			end = i
			break
		}
	}
	rawKey := line[:end]
	rest := trimLeftBlank(line[end:])
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = trimLeftBlank(rest[1:])
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return "", "", fmt.Errorf("key %q: %w", rawKey, err)
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		return "", "", fmt.Errorf("value of %s: %w", key, err)
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape %q`, s[i-1:])
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape %q`, s[i-1:i+5])
			}
			r := rune(n)
			i += 4
			// Java strings are UTF-16: a character outside the BMP is two escapes.
			if utf16.IsSurrogate(r) && i+6 < len(s) && strings.HasPrefix(s[i+1:], `\u`) {
				if lo, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil {
					if dec := utf16.DecodeRune(r, rune(lo)); dec != unicode.ReplacementChar {
						r = dec
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
