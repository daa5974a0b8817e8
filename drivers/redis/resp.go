package redis

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// This file is the RESP2 codec of mode=direct. RESP2 has five reply types, each a line
// with a one-byte tag; the client libraries' readers (go-redis's internal proto, redigo)
// return every reply as a fresh allocation or an interface value, which is the per-op cost
// mode=direct exists to avoid. The reader here hands out slices of its own buffer, valid
// until the next read, and the writer appends commands to a reused buffer.

// appendCommand appends a command of string arguments as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = appendArrayHeader(b, len(args))
	for _, a := range args {
		b = appendBulkString(b, a)
	}
	return b
}

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = appendLen(b, n)
	return append(b, '\r', '\n')
}

func appendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = appendLen(b, len(s))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, p []byte) []byte {
	b = append(b, '$')
	b = appendLen(b, len(p))
	b = append(b, '\r', '\n')
	b = append(b, p...)
	return append(b, '\r', '\n')
}

// appendLen appends a length or count n >= 0 in decimal. The lengths of a batch's commands
// are a few digits: written here directly, they cost a fraction of strconv.AppendInt's
// general path, which a key and a value took on every operation.
func appendLen(b []byte, n int) []byte {
	switch {
	case n < 10:
		return append(b, byte('0'+n))
	case n < 100:
		return append(b, byte('0'+n/10), byte('0'+n%10))
	case n < 1000:
		return append(b, byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10))
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// The fixed heads of the commands a batch sends most: the array header and the command's
// name, appended as one string.
const (
	getHead   = "*2\r\n$3\r\nGET\r\n"
	setHead   = "*3\r\n$3\r\nSET\r\n"
	setPXHead = "*5\r\n$3\r\nSET\r\n"
)

// maxBulk bounds a bulk reply's length, as Redis bounds a string (proto-max-bulk-len,
// 512 MB): a corrupt length must not make the reader allocate gigabytes.
const maxBulk = 512 << 20

// errProtocol reports a reply that is not RESP2; the connection is then unusable.
var errProtocol = errors.New("redis protocol error")

// replyError is an error reply (-ERR ..., -WRONGTYPE ...): the command failed, the
// connection is fine.
type replyError string

func (e replyError) Error() string { return string(e) }

// respReader reads RESP2 replies through a buffer it owns (driver.LineReader).
type respReader struct {
	*driver.LineReader
}

func newRespReader(src io.Reader) *respReader {
	return &respReader{driver.NewLineReader(src, 16<<10)}
}

// line returns the next line without its CRLF, valid until the next read; a line that is
// not RESP names the server that sent it when it can tell.
func (rd *respReader) line() ([]byte, error) {
	l, err := rd.Line()
	if err != nil && errors.Is(err, driver.ErrLineWithoutCRLF) {
		if what := foreignServer(l); what != "" {
			return nil, fmt.Errorf("%w: this is not a Redis server: %s", errProtocol, what)
		}
		return nil, fmt.Errorf("%w: line without CRLF", errProtocol)
	}
	return l, err
}

// reply reads one reply. For a bulk string it returns the bytes (nil for the null bulk
// $-1, which is how GET says "no such key"); for a status or an integer the line after
// the tag; an error reply is returned as a replyError. For an array it returns its length
// in n and leaves the elements to be read one by one. tag is the reply's type byte.
// A reply cut by an error (a stale interrupt's deadline, which the caller rides out by
// calling again) is unread whole: a bulk's length line stays unread until its bytes are
// all there, so the next call starts at the reply's first byte, not inside its data.
func (rd *respReader) reply() (tag byte, data []byte, n int, err error) {
	l, err := rd.line()
	if err != nil {
		return 0, nil, 0, err
	}
	if len(l) == 0 {
		return 0, nil, 0, fmt.Errorf("%w: empty line", errProtocol)
	}
	tag, rest := l[0], l[1:]
	switch tag {
	case '+', ':':
		return tag, rest, 0, nil
	case '-':
		return tag, nil, 0, replyError(rest)
	case '$':
		size, err := parseLen(rest)
		if err != nil {
			return tag, nil, 0, err
		}
		if size < 0 {
			return tag, nil, -1, nil
		}
		// The length line with its CRLF stays unread until the bulk is whole.
		head := len(l) + 2
		rd.UnreadLine(l)
		if err := rd.Need(head + size + 2); err != nil {
			return tag, nil, 0, err
		}
		b := rd.Buffered()
		data := b[head : head+size : head+size]
		if b[head+size] != '\r' || b[head+size+1] != '\n' {
			return tag, nil, 0, fmt.Errorf("%w: bulk of %d bytes not followed by CRLF", errProtocol, size)
		}
		rd.Discard(head + size + 2)
		return tag, data, size, nil
	case '*':
		size, err := parseLen(rest)
		if err != nil {
			return tag, nil, 0, err
		}
		return tag, nil, size, nil
	}
	if what := foreignServer(l); what != "" {
		return tag, nil, 0, fmt.Errorf("%w: this is not a Redis server: %s", errProtocol, what)
	}
	return tag, nil, 0, fmt.Errorf("%w: unknown reply type %q", errProtocol, tag)
}

// foreignServer names the kind of server a first line that is not RESP came from, when
// it is one a user often points the driver at by mistake (a web port, memcached's), so
// the error says what to fix instead of a protocol detail; "" when it cannot tell.
func foreignServer(line []byte) string {
	first := string(line[:min(len(line), 64)])
	switch {
	case strings.HasPrefix(first, "HTTP/"), strings.HasPrefix(strings.ToLower(first), "<!doctype html"), strings.HasPrefix(strings.ToLower(first), "<html"):
		return fmt.Sprintf("it answered HTTP (%q): check the address and port", strings.TrimSpace(first))
	case first == "ERROR" || strings.HasPrefix(first, "CLIENT_ERROR") || strings.HasPrefix(first, "SERVER_ERROR"):
		return fmt.Sprintf("it answered like memcached (%q): use --driver memcached, or check the port", first)
	case strings.HasPrefix(first, "SSH-"):
		return "it answered SSH: check the address and port"
	case len(line) > 0 && line[0] == 0x15:
		return "it answered a TLS alert: set drivers.redis.tls=true, or check the port"
	}
	return ""
}

// skip reads and discards one reply, arrays included.
func (rd *respReader) skip() error {
	tag, _, n, err := rd.reply()
	if err != nil && !isReplyError(err) {
		return err
	}
	if tag == '*' {
		for i := 0; i < n; i++ {
			if err := rd.skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseLen parses a bulk or array length: -1 (null) or 0..maxBulk.
func parseLen(b []byte) (int, error) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, nil
	}
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
	if n > maxBulk {
		return 0, fmt.Errorf("%w: length %d above %d", errProtocol, n, maxBulk)
	}
	return n, nil
}
