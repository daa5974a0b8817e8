package cassandra

import (
	"encoding/binary"
	"fmt"

	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// The per-operation half of mode=direct's CQL codec: EXECUTE frames appended to a buffer
// and RESULT bodies parsed in place, with no allocation. The layouts are those of native
// protocol v4 (CQL binary protocol spec, sections 2, 4.1.6 and 4.2.5); the constants are
// the library's, and cql_test.go checks the bytes against the library's own encoder and
// decoder.

// Query flags of the EXECUTE options this driver sends.
const (
	flagValues       = byte(primitive.QueryFlagValues)
	flagSkipMetadata = byte(primitive.QueryFlagSkipMetadata)
	flagTimestamp    = byte(primitive.QueryFlagDefaultTimestamp)
)

// Rows metadata flags (spec 4.2.5.2).
const (
	rowsGlobalSpec   = 0x0001
	rowsHasMorePages = 0x0002
	rowsNoMetadata   = 0x0004
)

// appendHeader appends a request header whose body length is patched by finishFrame.
func appendHeader(w []byte, stream int16, opcode primitive.OpCode) []byte {
	return append(w, byte(protoVersion), 0, byte(uint16(stream)>>8), byte(stream), byte(opcode), 0, 0, 0, 0)
}

// finishFrame writes the body length of the frame that starts at start.
func finishFrame(w []byte, start int) []byte {
	binary.BigEndian.PutUint32(w[start+5:], uint32(len(w)-start-headerLen))
	return w
}

func appendShortBytes(w, b []byte) []byte {
	w = binary.BigEndian.AppendUint16(w, uint16(len(b)))
	return append(w, b...)
}

func appendValue(w, b []byte) []byte {
	w = binary.BigEndian.AppendUint32(w, uint32(len(b)))
	return append(w, b...)
}

func appendStringValue(w []byte, s string) []byte {
	w = binary.BigEndian.AppendUint32(w, uint32(len(s)))
	return append(w, s...)
}

// appendReadExecute appends the EXECUTE of the read statement for key. It asks the server
// to skip the result metadata: the driver knows its columns.
func appendReadExecute(w []byte, stream int16, id []byte, cl uint16, key string) []byte {
	start := len(w)
	w = appendHeader(w, stream, primitive.OpCodeExecute)
	w = appendShortBytes(w, id)
	w = binary.BigEndian.AppendUint16(w, cl)
	w = append(w, flagValues|flagSkipMetadata)
	w = binary.BigEndian.AppendUint16(w, 1)
	w = appendStringValue(w, key)
	return finishFrame(w, start)
}

// appendWriteExecute appends the EXECUTE of the write statement: key, row, and value cut
// into cols pieces as split does, with a client-side timestamp as gocql sends.
func appendWriteExecute(w []byte, stream int16, id []byte, cl uint16, key string, row int32, value []byte, cols int, ts int64) []byte {
	start := len(w)
	w = appendHeader(w, stream, primitive.OpCodeExecute)
	w = appendShortBytes(w, id)
	w = binary.BigEndian.AppendUint16(w, cl)
	w = append(w, flagValues|flagTimestamp)
	w = binary.BigEndian.AppendUint16(w, uint16(2+cols))
	w = appendStringValue(w, key)
	w = binary.BigEndian.AppendUint32(w, 4)
	w = binary.BigEndian.AppendUint32(w, uint32(row))
	l := len(value)
	for i := range cols {
		w = appendValue(w, value[i*l/cols:(i+1)*l/cols])
	}
	w = binary.BigEndian.AppendUint64(w, uint64(ts))
	return finishFrame(w, start)
}

// parseHeader splits a response header.
func parseHeader(h []byte) (version, flags byte, stream int16, opcode primitive.OpCode, length int32) {
	return h[0], h[1], int16(binary.BigEndian.Uint16(h[2:])), primitive.OpCode(h[4]), int32(binary.BigEndian.Uint32(h[5:]))
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// reader walks a body in place.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("%w: reply body cut short", errProtocol)
		}
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) short() int {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

func (r *reader) int() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// bytes reads a [bytes]: nil for a null (negative length).
func (r *reader) bytes() []byte {
	n := r.int()
	if n < 0 || r.err != nil {
		return nil
	}
	return r.take(int(n))
}

func (r *reader) string() { r.take(r.short()) }

// option skips a column type ([option], spec 4.2.5.2): the driver's columns are simple
// types, but a custom or collection type is skipped properly too.
func (r *reader) option() {
	id := r.short()
	switch id {
	case 0x0000: // custom: class name
		r.string()
	case 0x0020, 0x0022: // list, set
		r.option()
	case 0x0021: // map
		r.option()
		r.option()
	case 0x0030: // UDT
		r.string()
		r.string()
		for n := r.short(); n > 0 && r.err == nil; n-- {
			r.string()
			r.option()
		}
	case 0x0031: // tuple
		for n := r.short(); n > 0 && r.err == nil; n-- {
			r.option()
		}
	}
}

// skipBodyPrefix skips what the header flags put before a response's message, in the
// order the spec gives: a tracing id, a custom payload, warnings.
func skipBodyPrefix(flags byte, body []byte) ([]byte, error) {
	if flags == 0 {
		return body, nil
	}
	r := reader{b: body}
	if flags&byte(primitive.HeaderFlagTracing) != 0 {
		r.take(16)
	}
	if flags&byte(primitive.HeaderFlagCustomPayload) != 0 {
		for n := r.short(); n > 0 && r.err == nil; n-- {
			r.string()
			r.bytes()
		}
	}
	if flags&byte(primitive.HeaderFlagWarning) != 0 {
		for n := r.short(); n > 0 && r.err == nil; n-- {
			r.string()
		}
	}
	return r.b, r.err
}

// rowsReader walks the rows of a RESULT body of kind Rows in place.
type rowsReader struct {
	r    reader
	left int32 // rows not read yet
	cols int
}

// parseRows reads the header of a RESULT body of kind Rows, which must have want
// columns; next then reads the rows. A RESULT of another kind is an error.
func parseRows(body []byte, want int) (rowsReader, error) {
	r := reader{b: body}
	kind := r.int()
	if r.err != nil {
		return rowsReader{}, r.err
	}
	if primitive.ResultType(kind) != primitive.ResultTypeRows {
		return rowsReader{}, fmt.Errorf("%w: a read answered RESULT kind %d, want Rows", errProtocol, kind)
	}
	flags := r.int()
	n := int(r.int())
	if flags&rowsHasMorePages != 0 {
		r.bytes()
	}
	if flags&rowsNoMetadata == 0 {
		if flags&rowsGlobalSpec != 0 {
			r.string()
			r.string()
		}
		for i := 0; i < n && r.err == nil; i++ {
			if flags&rowsGlobalSpec == 0 {
				r.string()
				r.string()
			}
			r.string()
			r.option()
		}
	}
	rows := r.int()
	if r.err != nil {
		return rowsReader{}, r.err
	}
	if n != want {
		return rowsReader{}, fmt.Errorf("%w: rows of %d columns, want %d", errProtocol, n, want)
	}
	return rowsReader{r: r, left: rows, cols: n}, nil
}

// next reads the next row's cells (nil for a null) into buf, which it returns; the cells
// point into the body. It returns false after the last row or on an error (see err).
func (rr *rowsReader) next(buf [][]byte) ([][]byte, bool) {
	if rr.left <= 0 || rr.r.err != nil {
		return buf, false
	}
	rr.left--
	buf = buf[:0]
	for range rr.cols {
		buf = append(buf, rr.r.bytes())
	}
	return buf, rr.r.err == nil
}

func (rr *rowsReader) err() error { return rr.r.err }
