package gremlin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// The subset of GraphBinary 1.0 (TinkerPop's binary serialization, "IO Reference" in the
// TinkerPop docs) the driver speaks: request messages whose arguments are strings, longs
// and maps of them, and response messages whose results are the scalar and collection
// types the driver's scripts can return. Anything else in a reply is an error naming the
// type code, never a guess.

const graphBinaryMime = "application/vnd.graphbinary-v1.0"

// GraphBinary type codes used here.
const (
	gbInt     = 0x01
	gbLong    = 0x02
	gbString  = 0x03
	gbDouble  = 0x07
	gbFloat   = 0x08
	gbList    = 0x09
	gbMap     = 0x0a
	gbSet     = 0x0b
	gbUUID    = 0x0c
	gbBuffer  = 0x25
	gbBoolean = 0x27
	gbBulkSet = 0x2a
	gbNull    = 0xfe // unspecified null
)

// Gremlin Server status codes (org.apache.tinkerpop.gremlin.util.message.ResponseStatusCode).
const (
	statusSuccess          = 200
	statusNoContent        = 204
	statusPartialContent   = 206
	statusUnauthorized     = 401
	statusAuthenticate     = 407
	statusTooManyRequests  = 429
	statusMalformed        = 498
	statusInvalidArgs      = 499
	statusServerError      = 500
	statusFailStep         = 595
	statusTemporary        = 596
	statusEvaluation       = 597
	statusServerTimeout    = 598
	statusSerializationErr = 599
)

// requestID is a request's UUID, as 16 bytes.
type requestID [16]byte

// appendRequest encodes a request message: the MIME type header Gremlin Server's
// WebSocket handler reads first, then version, id, op, processor and the arguments.
// args are written in order (pairs of key and value) so the encoding is deterministic.
func appendRequest(b []byte, id requestID, op, processor string, args ...any) ([]byte, error) {
	b = append(b, byte(len(graphBinaryMime)))
	b = append(b, graphBinaryMime...)
	b = append(b, 0x81)
	b = append(b, id[:]...)
	b = appendBareString(b, op)
	b = appendBareString(b, processor)
	b = binary.BigEndian.AppendUint32(b, uint32(len(args)/2))
	var err error
	for _, a := range args {
		if b, err = appendValue(b, a); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBareString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// kv is an ordered map for request arguments and bindings.
type kv []any

// appendValue writes a fully qualified value: type code, value flag, value.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, gbNull, 0x01), nil
	case string:
		b = append(b, gbString, 0)
		return appendBareString(b, x), nil
	case int64:
		b = append(b, gbLong, 0)
		return binary.BigEndian.AppendUint64(b, uint64(x)), nil
	case int32:
		b = append(b, gbInt, 0)
		return binary.BigEndian.AppendUint32(b, uint32(x)), nil
	case bool:
		if x {
			return append(b, gbBoolean, 0, 1), nil
		}
		return append(b, gbBoolean, 0, 0), nil
	case []any:
		b = append(b, gbList, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
		var err error
		for _, e := range x {
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case kv:
		b = append(b, gbMap, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)/2))
		var err error
		for _, e := range x {
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("graphbinary: cannot encode %T", v)
}

// response is a decoded response message.
type response struct {
	id      requestID
	status  int32
	message string
	data    []any // the result items (a script's results arrive as a list)
}

var errShort = errors.New("graphbinary: message truncated")

// decoder reads GraphBinary from a byte slice; every read checks the bounds, so a
// truncated or hostile message is an error, never a panic.
type decoder struct {
	b   []byte
	off int
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || len(d.b)-d.off < n {
		return nil, errShort
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p, nil
}

func (d *decoder) byte1() (byte, error) {
	p, err := d.take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func (d *decoder) int32() (int32, error) {
	p, err := d.take(4)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(p)), nil
}

func (d *decoder) int64() (int64, error) {
	p, err := d.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(p)), nil
}

func (d *decoder) length() (int, error) {
	n, err := d.int32()
	if err != nil {
		return 0, err
	}
	if n < 0 || int(n) > len(d.b)-d.off {
		return 0, fmt.Errorf("graphbinary: length %d beyond the message's %d remaining bytes", n, len(d.b)-d.off)
	}
	return int(n), nil
}

func (d *decoder) bareString() (string, error) {
	n, err := d.length()
	if err != nil {
		return "", err
	}
	p, err := d.take(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(p) {
		return "", errors.New("graphbinary: string is not UTF-8")
	}
	return string(p), nil
}

// decodeResponse parses a response message. Status attributes and result metadata are
// read and dropped: the driver needs only the code, the message and the data.
func decodeResponse(b []byte) (response, error) {
	var r response
	d := &decoder{b: b}
	ver, err := d.byte1()
	if err != nil {
		return r, err
	}
	if ver != 0x81 {
		return r, fmt.Errorf("graphbinary: response version byte 0x%02x, want 0x81", ver)
	}
	flag, err := d.byte1()
	if err != nil {
		return r, err
	}
	if flag&0x01 == 0 {
		p, err := d.take(16)
		if err != nil {
			return r, err
		}
		copy(r.id[:], p)
	}
	if r.status, err = d.int32(); err != nil {
		return r, err
	}
	if flag, err = d.byte1(); err != nil {
		return r, err
	}
	if flag&0x01 == 0 {
		if r.message, err = d.bareString(); err != nil {
			return r, err
		}
	}
	for range 2 { // status attributes, result metadata: bare maps
		if _, err := d.bareMap(0); err != nil {
			return r, fmt.Errorf("status attributes or metadata: %w", err)
		}
	}
	v, err := d.value(0)
	if err != nil {
		return r, fmt.Errorf("result data: %w", err)
	}
	switch x := v.(type) {
	case nil:
	case []any:
		r.data = x
	default:
		r.data = []any{x}
	}
	return r, nil
}

// maxDepth bounds nesting so a hostile message cannot exhaust the stack.
const maxDepth = 32

// value reads a fully qualified value.
func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("graphbinary: values nested too deep")
	}
	code, err := d.byte1()
	if err != nil {
		return nil, err
	}
	flag, err := d.byte1()
	if err != nil {
		return nil, err
	}
	if code == gbNull || flag&0x01 != 0 {
		return nil, nil
	}
	switch code {
	case gbInt:
		n, err := d.int32()
		return int64(n), err
	case gbLong:
		return d.int64()
	case gbString:
		return d.bareString()
	case gbDouble:
		n, err := d.int64()
		return math.Float64frombits(uint64(n)), err
	case gbFloat:
		n, err := d.int32()
		return float64(math.Float32frombits(uint32(n))), err
	case gbBoolean:
		v, err := d.byte1()
		return v != 0, err
	case gbUUID:
		p, err := d.take(16)
		if err != nil {
			return nil, err
		}
		var id requestID
		copy(id[:], p)
		return id, nil
	case gbBuffer:
		n, err := d.length()
		if err != nil {
			return nil, err
		}
		p, err := d.take(n)
		return append([]byte(nil), p...), err
	case gbList, gbSet:
		n, err := d.length()
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, min(n, 1024))
		for range n {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case gbBulkSet:
		n, err := d.length()
		if err != nil {
			return nil, err
		}
		var out []any
		for range n {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			bulk, err := d.int64()
			if err != nil {
				return nil, err
			}
			if bulk < 0 || bulk > 1<<20 {
				return nil, fmt.Errorf("graphbinary: bulk %d out of range", bulk)
			}
			for range bulk {
				out = append(out, v)
			}
		}
		return out, nil
	case gbMap:
		return d.bareMap(depth + 1)
	}
	return nil, fmt.Errorf("graphbinary: unsupported type code 0x%02x in a reply", code)
}

// bareMap reads a map without its type code and flag. Keys that are not strings are
// formatted, which is enough for the metadata maps the driver discards.
func (d *decoder) bareMap(depth int) (map[string]any, error) {
	n, err := d.length()
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, min(n, 64))
	for range n {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[fmt.Sprint(k)] = v
	}
	return m, nil
}
