package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// chunkConn is a net.Conn whose reads hand out the server's bytes chunk bytes at a
// time (a reply split across segments), then err; writes are kept.
type chunkConn struct {
	net.Conn
	from  []byte
	chunk int
	err   error
	wrote bytes.Buffer
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.from) == 0 {
		return 0, c.err
	}
	n := copy(p[:min(len(p), c.chunk)], c.from)
	c.from = c.from[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { return c.wrote.Write(p) }

// backend encodes the server's messages as PostgreSQL sends them.
func backend(t *testing.T, msgs ...pgproto3.BackendMessage) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestWireRequestIsWhatPgprotoSends checks the request wire encodes byte for byte
// against pgproto3's encoding of the same Bind, Execute and Sync (what exec sent before
// it wrote them itself), for a read and an upsert.
func TestWireRequestIsWhatPgprotoSends(t *testing.T) {
	for _, tc := range []struct {
		name    string
		write   bool
		key     string
		value   []byte
		params  [][]byte
		results []int16
	}{
		{"read", false, "T123", nil, [][]byte{[]byte("T123")}, []int16{1}},
		{"upsert", true, "T9", []byte("value"), [][]byte{[]byte("T9"), []byte("value")}, nil},
		{"upsert of an empty value", true, "", []byte{}, [][]byte{{}, {}}, nil},
		{"upsert of a large value", true, "k", bytes.Repeat([]byte{7}, 70000), [][]byte{[]byte("k"), bytes.Repeat([]byte{7}, 70000)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(nil)
			stmt := readStmt
			if tc.write {
				stmt = writeStmt
			}
			w.request(stmt, tc.key, tc.value, tc.write)
			var want []byte
			var err error
			for _, m := range []pgproto3.FrontendMessage{
				&pgproto3.Bind{PreparedStatement: stmt, ParameterFormatCodes: []int16{1}, Parameters: tc.params, ResultFormatCodes: tc.results},
				&pgproto3.Execute{}, &pgproto3.Sync{},
			} {
				if want, err = m.Encode(want); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(w.out, want) {
				t.Errorf("request\n got %q\nwant %q", w.out, want)
			}
		})
	}
}

// TestWireReply reads replies as the server sends them, whole and split across reads,
// to what exec reports: the value, a miss, a server error with the stream still in step,
// and failures of a stream out of step.
func TestWireReply(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 20000) // past the first buffer: it grows
	row := func(vals ...[]byte) *pgproto3.DataRow { return &pgproto3.DataRow{Values: vals} }
	rfq := &pgproto3.ReadyForQuery{TxStatus: 'I'}
	for _, tc := range []struct {
		name      string
		stream    []byte
		wantVal   string
		wantFound bool
		wantPg    string // the server error's SQLSTATE
		wantErr   string // an I/O or stream failure
		wantLeft  bool   // bytes past the ReadyForQuery
	}{
		{name: "read", stream: backend(t, &pgproto3.BindComplete{}, row([]byte("abc")), &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, rfq),
			wantVal: "abc", wantFound: true},
		{name: "large value", stream: backend(t, &pgproto3.BindComplete{}, row(big), &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, rfq),
			wantVal: string(big), wantFound: true},
		{name: "miss", stream: backend(t, &pgproto3.BindComplete{}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")}, rfq)},
		{name: "upsert", stream: backend(t, &pgproto3.BindComplete{}, &pgproto3.CommandComplete{CommandTag: []byte("INSERT 0 1")}, rfq)},
		{name: "NULL reads as empty", stream: backend(t, &pgproto3.BindComplete{}, row(nil), &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, rfq),
			wantFound: true},
		{name: "row of two columns is no value", stream: backend(t, &pgproto3.BindComplete{}, row([]byte("a"), []byte("b")), rfq)},
		{name: "notice and parameter status between", stream: backend(t, &pgproto3.NoticeResponse{Severity: "NOTICE", Message: "hello"},
			&pgproto3.BindComplete{}, &pgproto3.ParameterStatus{Name: "x", Value: "y"}, row([]byte("v")), rfq),
			wantVal: "v", wantFound: true},
		{name: "server error", stream: backend(t, &pgproto3.ErrorResponse{Severity: "ERROR", Code: "23514", Message: "check violated"}, rfq),
			wantPg: "23514"},
		{name: "reply after ReadyForQuery stays buffered", stream: backend(t, &pgproto3.BindComplete{}, rfq, &pgproto3.NoticeResponse{Message: "late"}),
			wantLeft: true},
		{name: "connection closed mid-reply", stream: backend(t, &pgproto3.BindComplete{}, row([]byte("abc")))[:12],
			wantErr: io.ErrUnexpectedEOF.Error()},
		{name: "length out of step", stream: []byte{'D', 0xff, 0, 0, 0, 0},
			wantErr: "out of step"},
		{name: "row shorter than its column", stream: []byte{'D', 0, 0, 0, 10, 0, 1, 0, 0, 0, 9},
			wantErr: "a data row's column of 9 bytes in 0"},
	} {
		for _, chunk := range []int{1 << 20, 3, 1} {
			c := &chunkConn{from: tc.stream, chunk: chunk, err: io.EOF}
			w := newWire(c)
			val, found, pgErr, err := w.reply(make([]byte, 0, 4))
			name := tc.name
			if chunk < 1<<20 {
				name += fmt.Sprintf(" in reads of %d", chunk)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s: error %v, want one saying %q", name, err, tc.wantErr)
				}
				continue
			case err != nil:
				t.Errorf("%s: %v", name, err)
				continue
			}
			var pe *pgconn.PgError
			if tc.wantPg != "" {
				if !errors.As(pgErr, &pe) || pe.Code != tc.wantPg {
					t.Errorf("%s: server error %v, want SQLSTATE %s", name, pgErr, tc.wantPg)
				}
			} else if pgErr != nil {
				t.Errorf("%s: server error %v", name, pgErr)
			}
			if string(val) != tc.wantVal || found != tc.wantFound {
				t.Errorf("%s: value %.20q found %v, want %.20q %v", name, val, found, tc.wantVal, tc.wantFound)
			}
			if w.buffered() != tc.wantLeft && chunk == 1<<20 {
				t.Errorf("%s: buffered() = %v, want %v", name, w.buffered(), tc.wantLeft)
			}
		}
	}
}

// TestWireReplyKeepsWhatADeadlineCut reads a reply cut by a deadline (Interrupt's) and
// then the rest: what came before the cut stays buffered, as the drain after a timeout
// needs it to.
func TestWireReplyKeepsWhatADeadlineCut(t *testing.T) {
	stream := backend(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("value")}}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	c := &chunkConn{from: stream[:9], chunk: 1 << 20, err: os.ErrDeadlineExceeded}
	w := newWire(c)
	if _, _, _, err := w.reply(nil); !isTimeout(err) {
		t.Fatalf("cut reply: %v, want the deadline's timeout", err)
	}
	c.from, c.err = stream[9:], io.EOF
	val, found, pgErr, err := w.reply(nil)
	if err != nil || pgErr != nil || !found || string(val) != "value" {
		t.Fatalf("rest of the reply: %q %v %v %v, want the value", val, found, pgErr, err)
	}
}
