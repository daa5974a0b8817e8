package memcached

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestTextReplies reads replies as memcached sends them, whole and one byte per read
// (a reply split across TCP segments), and checks what an operation sees: the value, a
// miss, an error line that keeps the connection, or a stream that must be dropped.
func TestTextReplies(t *testing.T) {
	big := strings.Repeat("x", 40<<10) // beyond the reader's first buffer
	for _, tc := range []struct {
		name, stream string
		read         func(*textReader) ([]byte, bool, error)
		value        string
		found        bool
		inStep       bool   // for an error: the connection stays usable
		errText      string // "" = no error
	}{
		{"hit", "VALUE k 0 5\r\nhello\r\nEND\r\n", get, "hello", true, true, ""},
		{"hit with CRLF inside", "VALUE k 0 4\r\n\r\n\r\n\r\nEND\r\n", get, "\r\n\r\n", true, true, ""},
		{"empty value", "VALUE k 0 0\r\n\r\nEND\r\n", get, "", true, true, ""},
		{"big value", "VALUE k 0 40960\r\n" + big + "\r\nEND\r\n", get, big, true, true, ""},
		{"miss", "END\r\n", get, "", false, true, ""},
		{"server error", "SERVER_ERROR out of memory\r\n", get, "", false, true, "SERVER_ERROR out of memory"},
		{"client error", "CLIENT_ERROR bad command line format\r\n", get, "", false, false, "CLIENT_ERROR"},
		{"unknown command", "ERROR\r\n", get, "", false, false, "ERROR"},
		{"value too short", "VALUE k 0 9\r\nhello\r\nEND\r\n", get, "", false, false, "EOF"},
		{"no END", "VALUE k 0 5\r\nhello\r\nVALUE k 0 5\r\n", get, "", false, false, "not followed by CRLF END"},
		{"bad length", "VALUE k 0 -1\r\n", get, "", false, false, "bad length"},
		{"length too big", "VALUE k 0 99999999999\r\n", get, "", false, false, "bad length"},
		{"line without CR", "END\n", get, "", false, false, "without CRLF"},
		{"not memcached", "HTTP/1.1 400 Bad Request\r\n", get, "", false, false, "unexpected line"},
		{"stored", "STORED\r\n", stored, "", true, true, ""},
		{"not stored", "NOT_STORED\r\n", stored, "", false, true, "NOT_STORED"},
		{"object too large", "SERVER_ERROR object too large for cache\r\n", stored, "", false, true, "SERVER_ERROR object too large"},
		{"deleted", "DELETED\r\n", deleted, "", true, true, ""},
		{"delete of a missing key", "NOT_FOUND\r\n", deleted, "", false, true, ""},
		{"cut short", "STOR", stored, "", false, false, "EOF"},
	} {
		for _, oneByte := range []bool{false, true} {
			var src io.Reader = strings.NewReader(tc.stream)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			v, found, err := tc.read(newTextReader(src))
			switch {
			case tc.errText == "" && err != nil:
				t.Errorf("%s (one byte %v): %v", tc.name, oneByte, err)
			case tc.errText != "" && (err == nil || !strings.Contains(err.Error(), tc.errText)):
				t.Errorf("%s (one byte %v): err %v, want one saying %q", tc.name, oneByte, err, tc.errText)
			case tc.errText != "" && inStep(err) != tc.inStep:
				t.Errorf("%s: after %v the connection in step = %v, want %v", tc.name, err, inStep(err), tc.inStep)
			case err == nil && (string(v) != tc.value || found != tc.found):
				t.Errorf("%s (one byte %v) = %d bytes, found %v; want %d bytes, %v", tc.name, oneByte, len(v), found, len(tc.value), tc.found)
			}
		}
	}
}

func get(rd *textReader) ([]byte, bool, error) { return rd.get() }

func stored(rd *textReader) ([]byte, bool, error) {
	missing, err := rd.status(lineStored)
	return nil, !missing, err
}

func deleted(rd *textReader) ([]byte, bool, error) {
	missing, err := rd.status(lineDeleted)
	return nil, !missing, err
}

// TestTextReplySequence: replies read one after another from one stream stay in step,
// and a value handed out is intact although later replies are already buffered.
func TestTextReplySequence(t *testing.T) {
	rd := newTextReader(strings.NewReader("STORED\r\nVALUE a 0 3\r\nabc\r\nEND\r\nEND\r\nVALUE b 7 2\r\nde\r\nEND\r\n"))
	if _, err := rd.status(lineStored); err != nil {
		t.Fatal(err)
	}
	v, found, err := rd.get()
	if err != nil || !found || string(v) != "abc" {
		t.Fatalf("first get = %q, %v, %v", v, found, err)
	}
	if _, found, err := rd.get(); err != nil || found {
		t.Fatalf("miss = %v, %v", found, err)
	}
	if v, _, err := rd.get(); err != nil || string(v) != "de" {
		t.Fatalf("second get = %q, %v", v, err)
	}
	if _, _, err := rd.get(); !errors.Is(err, io.EOF) {
		t.Fatalf("past the end: %v", err)
	}
}

// TestRequests holds the encoders to the text protocol's request lines.
func TestRequests(t *testing.T) {
	var b []byte
	b = appendSet(b, "k1", []byte("a\r\nb"), 3600)
	b = appendGet(b, "k1")
	b = appendDelete(b, "k1")
	b = appendSet(b, "k2", nil, 0)
	want := "set k1 0 3600 4\r\na\r\nb\r\nget k1\r\ndelete k1\r\nset k2 0 0 0\r\n\r\n"
	if !bytes.Equal(b, []byte(want)) {
		t.Errorf("requests = %q, want %q", b, want)
	}
}

// FuzzTextReplies feeds the reply reader whatever a server (or something that is not
// one) may send: it must return an error or a value from the stream, never panic or hand
// out more bytes than it read.
func FuzzTextReplies(f *testing.F) {
	for _, s := range []string{"VALUE k 0 5\r\nhello\r\nEND\r\n", "END\r\n", "STORED\r\n", "SERVER_ERROR x\r\n", "VALUE k 0 99\r\n", "VALUE \r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		rd := newTextReader(bytes.NewReader(stream))
		for range 4 {
			v, _, err := rd.get()
			if err != nil {
				break
			}
			if len(v) > len(stream) || !bytes.Contains(stream, v) {
				t.Fatalf("value %q not from the stream %q", v, stream)
			}
		}
		rd = newTextReader(bytes.NewReader(stream))
		_, _ = rd.status(lineStored)
	})
}
