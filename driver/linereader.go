package driver

import (
	"bytes"
	"errors"
	"io"
)

// ErrLineWithoutCRLF is LineReader.Line's error for a line that ends in a bare LF (or is
// only an LF): the protocol is not the one expected, and the caller names what it got.
var ErrLineWithoutCRLF = errors.New("line without CRLF")

// LineReader reads the replies of a line-based protocol (RESP, memcached's text protocol)
// from a connection through a buffer it owns, so that a driver parses them in place,
// without an allocation per reply. A reply cut by an error (a deadline) leaves the bytes
// read so far in the buffer: the next call continues where the stream is.
type LineReader struct {
	src  io.Reader
	buf  []byte
	r, w int // unread bytes are buf[r:w]
	// most is the size reads may grow the buffer to; full says the last read filled the
	// room it had, so more was probably waiting.
	most int
	full bool
}

// lineReaderStart is the buffer a LineReader starts with: a reply of a 100-byte to
// 1,000-byte value in one read. A connection that waits for one such reply at a time never
// needs more, and with ten thousand connections a 16 KiB buffer each was 160 MB of heap
// (73% of it, issue 35), which the garbage collector's goal doubles.
const lineReaderStart = 1 << 10

// NewLineReader reads from src through a buffer that starts at 1 KiB (size, if smaller)
// and doubles up to size bytes while reads fill it, so that a connection carrying batches
// of replies reads them size bytes at a time. A line or value longer than the buffer grows
// it beyond size.
func NewLineReader(src io.Reader, size int) *LineReader {
	return &LineReader{src: src, buf: make([]byte, min(size, lineReaderStart)), most: size}
}

// fill reads more bytes, making room first: unread bytes move to the front, and the
// buffer doubles when they fill it, or when the last read filled it and it is below most.
func (rd *LineReader) fill() error {
	if rd.r > 0 {
		n := copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r, rd.w = 0, n
	}
	if rd.w == len(rd.buf) || rd.full && len(rd.buf) < rd.most {
		size := 2 * len(rd.buf)
		if rd.w < len(rd.buf) {
			size = min(size, rd.most)
		}
		nb := make([]byte, size)
		copy(nb, rd.buf[:rd.w])
		rd.buf = nb
	}
	n, err := rd.src.Read(rd.buf[rd.w:])
	rd.full = n == len(rd.buf)-rd.w
	rd.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// Line returns the next line without its CRLF, valid until the next read. A line that
// ends in a bare LF is returned (without its LF) with ErrLineWithoutCRLF and left unread.
func (rd *LineReader) Line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(rd.buf[rd.r:rd.w], '\n'); i >= 0 {
			end := rd.r + i
			if end == rd.r || rd.buf[end-1] != '\r' {
				return rd.buf[rd.r:end], ErrLineWithoutCRLF
			}
			l := rd.buf[rd.r : end-1]
			rd.r = end + 1
			return l, nil
		}
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
}

// UnreadLine puts back the line l that Line has just returned, with its CRLF: a reply
// whose length line must stay unread until its body is whole (Line moves no bytes once
// it has found a line, so they are still in the buffer).
func (rd *LineReader) UnreadLine(l []byte) { rd.r -= len(l) + 2 }

// Need makes n unread bytes available. A value larger than the buffer grows it for good:
// a connection that read a 1 MB value once is likely to read another.
func (rd *LineReader) Need(n int) error {
	if n > len(rd.buf) {
		nb := make([]byte, max(n, 2*len(rd.buf)))
		rd.w = copy(nb, rd.buf[rd.r:rd.w])
		rd.r, rd.buf = 0, nb
	}
	for rd.w-rd.r < n {
		if err := rd.fill(); err != nil {
			return err
		}
	}
	return nil
}

// Buffered returns the unread bytes, valid until the next read.
func (rd *LineReader) Buffered() []byte { return rd.buf[rd.r:rd.w] }

// Discard consumes n of the unread bytes (at most len(Buffered())).
func (rd *LineReader) Discard(n int) { rd.r += n }
