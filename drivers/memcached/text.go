package memcached

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// This file is the text-protocol codec of client=direct. gomemcache formats every request
// with fmt, reads through a bufio.ReadWriter per connection and returns each value in a
// fresh Item: allocations and copies on every operation, which client=direct exists to
// avoid. The reader here hands out slices of its own buffer, valid until the next read,
// and requests are appended to a buffer the connection reuses.

// errProtocol reports a reply that is not memcached's text protocol; the connection's
// replies are then out of step with its requests.
var errProtocol = errors.New("memcached protocol error")

// replyError is an error line (ERROR, CLIENT_ERROR ..., SERVER_ERROR ...) or a reply the
// command does not expect (NOT_STORED): the command failed. Its text is the line, which
// classOf reads as it reads gomemcache's errors.
type replyError string

func (e replyError) Error() string { return "unexpected response line: " + string(e) }

// inStep reports whether the connection's replies are still in step with its requests
// after this reply. memcached swallows the value of a set it refuses with SERVER_ERROR
// (too large, out of memory); after ERROR or CLIENT_ERROR it may read the value as
// commands, so the connection is dropped.
func (e replyError) inStep() bool {
	return !strings.HasPrefix(string(e), "ERROR") && !strings.HasPrefix(string(e), "CLIENT_ERROR")
}

// legalKey is gomemcache's rule, so both clients refuse the same keys before sending:
// at most 250 bytes, no spaces or control characters.
func legalKey(key string) bool {
	if len(key) > 250 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] == 0x7f {
			return false
		}
	}
	return true
}

// appendGet appends "get KEY\r\n".
func appendGet(b []byte, key string) []byte {
	b = append(b, "get "...)
	b = append(b, key...)
	return append(b, '\r', '\n')
}

// appendSet appends "set KEY 0 EXPTIME LEN\r\nVALUE\r\n" (flags 0, as gomemcache's Set of
// an Item without flags).
func appendSet(b []byte, key string, value []byte, exptime int32) []byte {
	b = append(b, "set "...)
	b = append(b, key...)
	b = append(b, " 0 "...)
	b = strconv.AppendInt(b, int64(exptime), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(value)), 10)
	b = append(b, '\r', '\n')
	b = append(b, value...)
	return append(b, '\r', '\n')
}

// appendDelete appends "delete KEY\r\n".
func appendDelete(b []byte, key string) []byte {
	b = append(b, "delete "...)
	b = append(b, key...)
	return append(b, '\r', '\n')
}

// maxValue bounds a value's length in a reply (memcached's largest item, -I 1024m): a
// corrupt length must not make the reader allocate without bound.
const maxValue = 1 << 30

// textReader reads replies through a buffer it owns (driver.LineReader).
type textReader struct {
	*driver.LineReader
}

func newTextReader(src io.Reader) *textReader {
	return &textReader{driver.NewLineReader(src, 16<<10)}
}

// line returns the next line without its CRLF, valid until the next read.
func (rd *textReader) line() ([]byte, error) {
	l, err := rd.Line()
	if errors.Is(err, driver.ErrLineWithoutCRLF) {
		return nil, fmt.Errorf("%w: line without CRLF: %q", errProtocol, clip(l))
	}
	return l, err
}

var (
	lineEnd     = []byte("END")
	lineStored  = []byte("STORED")
	lineDeleted = []byte("DELETED")
	lineMissing = []byte("NOT_FOUND")
	endCRLF     = []byte("END\r\n")
)

// get reads the reply to "get KEY": the value (a slice of the buffer, valid until the next
// read), or found=false for a miss. An error line is a replyError; any other error leaves
// the stream out of step.
func (rd *textReader) get() (value []byte, found bool, err error) {
	l, err := rd.line()
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(l, lineEnd) {
		return nil, false, nil
	}
	rest, ok := bytes.CutPrefix(l, []byte("VALUE "))
	if !ok {
		return nil, false, lineError(l)
	}
	// VALUE <key> <flags> <bytes>: the length is the last field (no cas: get, not gets).
	sp := bytes.LastIndexByte(rest, ' ')
	if sp < 0 {
		return nil, false, fmt.Errorf("%w: get answered %q", errProtocol, clip(l))
	}
	size, perr := parseSize(rest[sp+1:])
	if perr != nil {
		return nil, false, perr
	}
	// The value, its CRLF and the END line are read before the value is handed out, so no
	// later fill moves the bytes under it.
	if err := rd.Need(size + 2 + len(endCRLF)); err != nil {
		return nil, false, err
	}
	b := rd.Buffered()
	v := b[:size:size]
	tail := b[size : size+2+len(endCRLF)]
	if tail[0] != '\r' || tail[1] != '\n' || !bytes.Equal(tail[2:], endCRLF) {
		return nil, false, fmt.Errorf("%w: value of %d bytes not followed by CRLF END", errProtocol, size)
	}
	rd.Discard(size + 2 + len(endCRLF))
	return v, true, nil
}

// status reads a one-line reply and reports whether it is want; a NOT_FOUND is reported
// as missing, any other line is a replyError.
func (rd *textReader) status(want []byte) (missing bool, err error) {
	l, err := rd.line()
	if err != nil {
		return false, err
	}
	switch {
	case bytes.Equal(l, want):
		return false, nil
	case bytes.Equal(l, lineMissing):
		return true, nil
	}
	return false, lineError(l)
}

// lineError is the error for a reply line the command does not expect: a replyError when
// it is a line memcached answers commands with, errProtocol otherwise (the stream is not
// the text protocol, or not in step).
func lineError(l []byte) error {
	for _, p := range []string{"ERROR", "CLIENT_ERROR", "SERVER_ERROR", "NOT_STORED", "EXISTS", "NOT_FOUND"} {
		if bytes.HasPrefix(l, []byte(p)) {
			return replyError(clip(l))
		}
	}
	return fmt.Errorf("%w: unexpected line %q", errProtocol, clip(l))
}

// clip bounds the part of a line quoted in an error.
func clip(l []byte) string { return string(l[:min(len(l), 200)]) }

// parseSize parses a value's length: 0..maxValue.
func parseSize(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 10 {
		return 0, fmt.Errorf("%w: bad length %q", errProtocol, b)
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad length %q", errProtocol, b)
		}
		n = n*10 + int(c-'0')
	}
	if n > maxValue {
		return 0, fmt.Errorf("%w: length %d above %d", errProtocol, n, maxValue)
	}
	return n, nil
}
