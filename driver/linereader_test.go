package driver

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// LineReader over a stream read one byte at a time, through a buffer smaller than a
// value: lines, a length line put back until its body is whole, a bare LF refused and left
// unread, the end of the stream.
func TestLineReader(t *testing.T) {
	value := strings.Repeat("v", 100)
	in := "+OK\r\n$100\r\n" + value + "\r\nbad\n"
	rd := NewLineReader(iotest.OneByteReader(strings.NewReader(in)), 8)

	if l, err := rd.Line(); err != nil || string(l) != "+OK" {
		t.Fatalf("Line = %q, %v; want +OK", l, err)
	}
	l, err := rd.Line()
	if err != nil || string(l) != "$100" {
		t.Fatalf("Line = %q, %v; want $100", l, err)
	}
	rd.UnreadLine(l)
	if err := rd.Need(6 + 100 + 2); err != nil {
		t.Fatal(err)
	}
	b := rd.Buffered()
	if !strings.HasPrefix(string(b), "$100\r\n"+value+"\r\n") {
		t.Fatalf("Buffered after UnreadLine and Need = %q, want the length line and the value", b)
	}
	rd.Discard(6 + 100 + 2)
	for range 2 { // refused, and still there
		if l, err := rd.Line(); !errors.Is(err, ErrLineWithoutCRLF) || string(l) != "bad" {
			t.Fatalf("Line = %q, %v; want \"bad\" and ErrLineWithoutCRLF", l, err)
		}
	}
	rd.Discard(len("bad\n"))
	if _, err := rd.Line(); err == nil {
		t.Fatal("Line at the end of the stream: no error")
	}
}

// replyReader hands out one reply per Read, as a connection does when each request waits
// for its reply; reads counts the calls.
type replyReader struct {
	replies []string
	reads   int
}

func (r *replyReader) Read(p []byte) (int, error) {
	r.reads++
	if len(r.replies) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.replies[0])
	r.replies[0] = r.replies[0][n:]
	if r.replies[0] == "" {
		r.replies = r.replies[1:]
	}
	return n, nil
}

// A connection that reads one small reply at a time keeps a small buffer (issue 35: ten
// thousand such connections held 16 KiB each), and a reply larger than it still arrives
// whole.
func TestLineReaderStaysSmallForSmallReplies(t *testing.T) {
	value := strings.Repeat("v", 100)
	src := &replyReader{}
	for range 10000 {
		src.replies = append(src.replies, "$100\r\n"+value+"\r\n")
	}
	rd := NewLineReader(src, 16<<10)
	for i := range 10000 {
		l, err := rd.Line()
		if err != nil || string(l) != "$100" {
			t.Fatalf("reply %d: Line = %q, %v; want $100", i, l, err)
		}
		rd.UnreadLine(l)
		if err := rd.Need(6 + 100 + 2); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		rd.Discard(6 + 100 + 2)
	}
	if got := len(rd.buf); got > lineReaderStart {
		t.Errorf("after 10,000 replies of 108 bytes, one per read, the buffer is %d bytes; want at most %d", got, lineReaderStart)
	}
	big := strings.Repeat("b", 5000)
	src.replies = append(src.replies, "$5000\r\n"+big+"\r\n")
	l, err := rd.Line()
	if err != nil || string(l) != "$5000" {
		t.Fatalf("Line = %q, %v; want $5000", l, err)
	}
	rd.UnreadLine(l)
	if err := rd.Need(7 + 5000 + 2); err != nil {
		t.Fatal(err)
	}
	if got := string(rd.Buffered()[7 : 7+5000]); got != big {
		t.Errorf("a 5,000-byte value through a %d-byte buffer came out as %d bytes", lineReaderStart, len(got))
	}
}

// A connection whose replies come in bursts (pipelined batches) grows the buffer to size,
// so that it reads a burst in about as few calls as a buffer of that size from the start.
func TestLineReaderGrowsForBursts(t *testing.T) {
	const size = 16 << 10
	reply := "$100\r\n" + strings.Repeat("v", 100) + "\r\n"
	burst := strings.Repeat(reply, 600) // 64,800 bytes, all waiting
	counter := &replyReader{replies: []string{burst}}
	rd := NewLineReader(counter, size)
	for i := range 600 {
		l, err := rd.Line()
		if err != nil || string(l) != "$100" {
			t.Fatalf("reply %d: Line = %q, %v; want $100", i, l, err)
		}
		rd.UnreadLine(l)
		if err := rd.Need(len(reply)); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		rd.Discard(len(reply))
	}
	if len(rd.buf) != size {
		t.Errorf("after a burst of %d bytes the buffer is %d bytes; want %d", len(burst), len(rd.buf), size)
	}
	// 1, 2, 4 and 8 KiB while growing, then 16 KiB reads: 8 in all; a 16 KiB buffer from
	// the start took 4.
	if want := len(burst)/size + 5; counter.reads > want {
		t.Errorf("%d reads for a burst of %d bytes; want at most %d", counter.reads, len(burst), want)
	}
}
