package postgres

import (
	byteorder "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// wire is a connection's single operations, written and read on its socket directly:
// the request's three messages encoded into one reused buffer, the replies parsed in
// place from another. pgproto3's Frontend, which exec used before, reads through
// pgconn's background reader (a mutex and a condition variable per read), its chunk
// reader and a decoder per message type, and encodes Bind through a generic encoder:
// about a fifth of the client's user-space instructions per operation in
// docs/performance.md's callgrind count, where a reply is four small messages
// that one read brings in whole.
//
// pgconn still connects, prepares, runs the pipelined batches, cancels and closes. The
// two share the socket in turns, each at a ReadyForQuery with nothing buffered:
// pgconn's SyncConn (its documented hand-over for direct use) before wire takes the
// stream, and an empty wire buffer before pgconn takes it back.
type wire struct {
	nc  net.Conn
	out []byte // the request being sent
	in  []byte // replies read; in[r:w] not parsed yet
	r   int
	w   int
}

// Message types of the protocol that exec writes or tells apart.
const (
	msgBind          = 'B'
	msgExecute       = 'E'
	msgSync          = 'S'
	msgDataRow       = 'D'
	msgErrorResponse = 'E'
	msgReadyForQuery = 'Z'
)

// maxReply bounds one message's length: a value's row is far below it (a BYTEA holds at
// most 1 GB), and a larger length can only come from a stream out of step.
const maxReply = 1<<30 + 1<<20

// execSync is Execute of the unnamed portal with no row limit, then Sync.
var execSync = []byte{msgExecute, 0, 0, 0, 9, 0, 0, 0, 0, 0, msgSync, 0, 0, 0, 4}

func newWire(nc net.Conn) *wire {
	return &wire{nc: nc, out: make([]byte, 0, 512), in: make([]byte, 8192)}
}

// request encodes Bind of the prepared statement stmt, then Execute and Sync: a read
// binds key and asks for its result column in binary; a write binds key and value. Every
// parameter goes in binary (a TEXT key's binary form is its bytes, a BYTEA's is itself).
func (c *wire) request(stmt, key string, value []byte, write bool) {
	b := append(c.out[:0], msgBind, 0, 0, 0, 0, 0) // length, then the unnamed portal
	b = append(b, stmt...)
	b = append(b, 0, 0, 1, 0, 1) // the statement's end; one format code: binary
	nparams := uint16(1)
	if write {
		nparams = 2
	}
	b = byteorder.BigEndian.AppendUint16(b, nparams)
	b = byteorder.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	if write {
		b = byteorder.BigEndian.AppendUint32(b, uint32(len(value)))
		b = append(b, value...)
		b = append(b, 0, 0) // no result columns to format
	} else {
		b = append(b, 0, 1, 0, 1) // one result format code: binary
	}
	byteorder.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	c.out = append(b, execSync...)
}

// send writes the request. It is not left to the reply's first read (driver.WriteReader),
// which spares the receive that finds nothing but cost CPU per operation on a quiet
// machine: the build without it ran 1.08x the ops per client CPU-second of the build
// with it (docs/performance.md, "A quiet machine judges WriteRead: off").
func (c *wire) send() error {
	_, err := c.nc.Write(c.out)
	return err
}

// next returns the next message's type and body, reading as much as it needs. The body
// points into the buffer: it is valid until the next call.
func (c *wire) next() (byte, []byte, error) {
	// The checks before fill keep its call off the usual path: one read brings the
	// whole reply, and its messages are parsed from the buffer.
	if c.w-c.r < 5 {
		if err := c.fill(5); err != nil {
			return 0, nil, err
		}
	}
	typ := c.in[c.r]
	n := int(byteorder.BigEndian.Uint32(c.in[c.r+1:]))
	if n < 4 || n > maxReply {
		return 0, nil, fmt.Errorf("postgres: message %q of length %d: the connection is out of step", typ, n)
	}
	if c.w-c.r < 1+n {
		if err := c.fill(1 + n); err != nil {
			return 0, nil, err
		}
	}
	body := c.in[c.r+5 : c.r+1+n]
	c.r += 1 + n
	return typ, body, nil
}

// fill makes sure in[r:] holds n bytes, moving what is unread to the front and growing
// the buffer when a message does not fit.
func (c *wire) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	if c.r > 0 {
		c.w = copy(c.in, c.in[c.r:c.w])
		c.r = 0
	}
	if n > len(c.in) {
		in := make([]byte, max(n, 2*len(c.in)))
		copy(in, c.in[:c.w])
		c.in = in
	}
	for c.w < n {
		m, err := c.nc.Read(c.in[c.w:])
		c.w += m
		if err != nil {
			if errors.Is(err, io.EOF) && c.w < n {
				err = io.ErrUnexpectedEOF
			}
			if c.w >= n {
				return nil
			}
			return err
		}
	}
	return nil
}

// buffered reports whether bytes past the last ReadyForQuery were read: pgconn must not
// take the stream while wire holds part of it.
func (c *wire) buffered() bool { return c.r < c.w }

// reply reads one operation's replies up to its ReadyForQuery. A row's single column is
// appended to val[:0]; found says whether a row came. A server error comes back as its
// *pgconn.PgError in pgErr, with the connection in step (the server skips to the Sync);
// err is an I/O failure or a stream out of step.
func (c *wire) reply(val []byte) (out []byte, found bool, pgErr, err error) {
	out = val
	for {
		typ, body, err := c.next()
		if err != nil {
			return out, found, pgErr, err
		}
		switch typ {
		case msgDataRow:
			v, ok, err := dataRowValue(body)
			if err != nil {
				return out, found, pgErr, err
			}
			if ok {
				// body points into the buffer: copied before the next read.
				out, found = append(out[:0], v...), true
			}
		case msgErrorResponse:
			var m pgproto3.ErrorResponse
			if err := m.Decode(body); err != nil {
				return out, found, pgErr, fmt.Errorf("postgres: decode an error response: %w", err)
			}
			pgErr = pgconn.ErrorResponseToPgError(&m)
		case msgReadyForQuery:
			return out, found, pgErr, nil
		}
		// BindComplete, CommandComplete, and what the server may send at any time
		// (NoticeResponse, ParameterStatus, NotificationResponse): nothing to do.
	}
}

// dataRowValue returns the column of a row of one column; ok is false for a row of
// another width. A NULL reads as an empty value, as pgproto3's DataRow gave it.
func dataRowValue(body []byte) (v []byte, ok bool, err error) {
	if len(body) < 2 {
		return nil, false, errors.New("postgres: a data row too short for its column count")
	}
	if byteorder.BigEndian.Uint16(body) != 1 {
		return nil, false, nil
	}
	if len(body) < 6 {
		return nil, false, errors.New("postgres: a data row too short for its column's length")
	}
	n := int32(byteorder.BigEndian.Uint32(body[2:]))
	if n < 0 {
		return nil, true, nil
	}
	if int(n) > len(body)-6 {
		return nil, false, fmt.Errorf("postgres: a data row's column of %d bytes in %d", n, len(body)-6)
	}
	return body[6 : 6+n], true, nil
}
