package driver

import (
	"errors"
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
