package redis

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func TestRespReplies(t *testing.T) {
	big := strings.Repeat("x", 100000)
	tests := []struct {
		in      string
		tag     byte
		data    string
		n       int
		replyEr string // an error reply's text
		bad     bool   // a protocol error
	}{
		{in: "+OK\r\n", tag: '+', data: "OK"},
		{in: ":42\r\n", tag: ':', data: "42"},
		{in: "$5\r\nhello\r\n", tag: '$', data: "hello", n: 5},
		{in: "$0\r\n\r\n", tag: '$', data: "", n: 0},
		{in: "$-1\r\n", tag: '$', n: -1},
		{in: "$8\r\nbin\r\n\x00\xff!\r\n", tag: '$', data: "bin\r\n\x00\xff!", n: 8},
		{in: "$100000\r\n" + big + "\r\n", tag: '$', data: big, n: 100000},
		{in: "*3\r\n", tag: '*', n: 3},
		{in: "-WRONGTYPE Operation against a key\r\n", tag: '-', replyEr: "WRONGTYPE Operation against a key"},
		{in: "$5\r\nhelloXY", bad: true},
		{in: "$abc\r\n", bad: true},
		{in: "$999999999999\r\n", bad: true},
		{in: "?x\r\n", bad: true},
		{in: "+OK\n", bad: true},
	}
	for _, tt := range tests {
		// One byte per Read: every reply must survive being split anywhere.
		rd := newRespReader(iotest.OneByteReader(strings.NewReader(tt.in)))
		tag, data, n, err := rd.reply()
		var re replyError
		switch {
		case tt.bad:
			if !errors.Is(err, errProtocol) {
				t.Errorf("reply(%.20q) err = %v, want a protocol error", tt.in, err)
			}
		case tt.replyEr != "":
			if !errors.As(err, &re) || string(re) != tt.replyEr {
				t.Errorf("reply(%.20q) err = %v, want the error reply %q", tt.in, err, tt.replyEr)
			}
		case err != nil || tag != tt.tag || string(data) != tt.data || n != tt.n:
			t.Errorf("reply(%.20q) = %q, %.20q, %d, %v; want %q, %.20q, %d", tt.in, tag, data, n, err, tt.tag, tt.data, tt.n)
		}
	}
}

// TestRespCommandRoundTrip: what appendCommand writes is what a RESP parser reads back as
// an array of bulk strings (the reader parses the same framing servers send).
func TestRespCommandRoundTrip(t *testing.T) {
	args := []string{"SET", "key with spaces", "v\r\n\x00", ""}
	rd := newRespReader(bytes.NewReader(appendCommand(nil, args...)))
	tag, _, n, err := rd.reply()
	if err != nil || tag != '*' || n != len(args) {
		t.Fatalf("array header: %q %d %v", tag, n, err)
	}
	for i, want := range args {
		_, data, _, err := rd.reply()
		if err != nil || string(data) != want {
			t.Errorf("argument %d = %q, %v; want %q", i, data, err, want)
		}
	}
	if _, _, _, err := rd.reply(); err != io.EOF {
		t.Errorf("after the command: %v, want EOF", err)
	}
}

// FuzzRespReader: no input makes the reader panic, loop or hand out a slice beyond what
// it read; what it accepts as a bulk is exactly the bytes framed.
func FuzzRespReader(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$3\r\nabc\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "-ERR x\r\n", "$-1\r\n", "*-1\r\n", "$2\r\nabc\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := newRespReader(bytes.NewReader(in))
		for i := 0; i < 64; i++ {
			if err := rd.skip(); err != nil {
				return
			}
		}
	})
}

// TestRespNamesForeignServers: a first reply from a server that does not speak RESP (the
// driver pointed at a web or memcached port) is named for what it is, so the error says
// what to fix; it was "unknown reply type 'H'".
func TestRespNamesForeignServers(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not a Redis server: it answered HTTP"},
		{"HTTP/1.0 200 OK\r\n", "not a Redis server: it answered HTTP"},
		{"ERROR\r\n", "it answered like memcached"},
		{"CLIENT_ERROR bad command line format\r\n", "it answered like memcached"},
		{"SSH-2.0-OpenSSH_9.2\r\n", "it answered SSH"},
		// An HTTP/1.0 server answers a request it cannot parse with a bare page.
		{"<!DOCTYPE HTML>\n<html lang=\"en\">\n", "not a Redis server: it answered HTTP"},
		{"?x\r\n", `unknown reply type '?'`},
	} {
		_, _, _, err := newRespReader(strings.NewReader(tt.in)).reply()
		if !errors.Is(err, errProtocol) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("reply(%.24q) err = %v, want a protocol error saying %q", tt.in, err, tt.want)
		}
	}
}

// cutReader returns its chunks one Read at a time, with err after the first: a reply
// whose bytes arrive in two reads with a stale interrupt's deadline between them.
type cutReader struct {
	chunks [][]byte
	err    error
	cut    bool
}

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	if c.cut {
		c.cut = false
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
		c.cut = true
	}
	return n, nil
}

// A bulk reply cut between its length line and its bytes by a deadline that the caller
// rides out (a stale interrupt: PipelineConn.Retry, then reply again) is read whole by the
// next call; the second call used to start inside the bulk's data.
func TestReplyRidesOutADeadlineInsideABulk(t *testing.T) {
	value := strings.Repeat("v", 40<<10) // larger than the reader's first buffer
	for _, cutAt := range []int{3, len("$40960\r\n"), len("$40960\r\n") + 100, len("$40960\r\n") + 20000} {
		reply := "$" + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n+OK\r\n"
		src := &cutReader{chunks: [][]byte{[]byte(reply[:cutAt]), []byte(reply[cutAt:])}, err: os.ErrDeadlineExceeded}
		rd := newRespReader(src)
		_, _, _, err := rd.reply()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cut at %d: first read: %v, want the deadline", cutAt, err)
		}
		tag, data, _, err := rd.reply()
		if err != nil || tag != '$' || string(data) != value {
			t.Fatalf("cut at %d: after the deadline: tag %q, %d bytes, %v; want the %d-byte bulk", cutAt, tag, len(data), err, len(value))
		}
		if tag, data, _, err := rd.reply(); err != nil || tag != '+' || string(data) != "OK" {
			t.Fatalf("cut at %d: next reply: %q %q %v, want +OK", cutAt, tag, data, err)
		}
	}
}

// TestRespCommandHeads: the commands a batch encodes with their fixed heads and appendLen
// are byte for byte what appendCommand writes with strconv's lengths.
func TestRespCommandHeads(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 65535, 1 << 20, maxBulk} {
		if got, want := string(appendLen(nil, n)), strconv.Itoa(n); got != want {
			t.Errorf("appendLen(%d) = %q, want %q", n, got, want)
		}
	}
	d := &Driver{}
	value := bytes.Repeat([]byte("x"), 100)
	for _, tt := range []struct {
		op   driver.PipelineOp
		ttl  time.Duration
		want []string
	}{
		{driver.PipelineOp{Op: driver.PipelineRead, Key: "T12345"}, 0, []string{"GET", "T12345"}},
		{driver.PipelineOp{Op: driver.PipelineWrite, Key: "T7", Value: value}, 0, []string{"SET", "T7", string(value)}},
		{driver.PipelineOp{Op: driver.PipelineWrite, Key: "k", Value: []byte{}}, 1500 * time.Millisecond, []string{"SET", "k", "", "PX", "1500"}},
	} {
		got := d.appendOp(nil, &tt.op, false, tt.ttl)
		if want := appendCommand(nil, tt.want...); !bytes.Equal(got, want) {
			t.Errorf("appendOp(%v) = %q, want %q", tt.want, got, want)
		}
	}
}
