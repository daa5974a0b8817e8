package cassandra

import (
	"bytes"
	"errors"
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datatype"
	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// libFrame encodes m as the library does.
func libFrame(t testing.TB, stream int16, m message.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := frame.NewCodec().EncodeFrame(frame.NewFrame(protoVersion, stream, m), &buf); err != nil {
		t.Fatalf("library encode: %v", err)
	}
	return buf.Bytes()
}

func values(vs ...[]byte) []*primitive.Value {
	out := make([]*primitive.Value, len(vs))
	for i, v := range vs {
		out[i] = primitive.NewValue(v)
	}
	return out
}

// TestExecuteMatchesLibrary checks the hot path's EXECUTE frames are byte for byte what
// the library encodes for the same message.
func TestExecuteMatchesLibrary(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	got := appendReadExecute(nil, 513, id, uint16(primitive.ConsistencyLevelLocalOne), "key-17")
	want := libFrame(t, 513, &message.Execute{QueryId: id, Options: &message.QueryOptions{
		Consistency: primitive.ConsistencyLevelLocalOne, PositionalValues: values([]byte("key-17")), SkipMetadata: true}})
	if !bytes.Equal(got, want) {
		t.Errorf("read EXECUTE:\n got %x\nwant %x", got, want)
	}
	value := []byte("abcdefgh")
	for _, cols := range []int{1, 3} {
		ts := int64(1_700_000_000_000_123)
		got := appendWriteExecute([]byte("prefix"), 7, id, uint16(primitive.ConsistencyLevelQuorum), "k", 2, value, cols, ts)
		pieces := [][]byte{[]byte("k"), {0, 0, 0, 2}}
		for _, p := range split(value, cols) {
			pieces = append(pieces, p.([]byte))
		}
		want := append([]byte("prefix"), libFrame(t, 7, &message.Execute{QueryId: id, Options: &message.QueryOptions{
			Consistency: primitive.ConsistencyLevelQuorum, PositionalValues: values(pieces...), DefaultTimestamp: &ts}})...)
		if !bytes.Equal(got, want) {
			t.Errorf("write EXECUTE, %d columns:\n got %x\nwant %x", cols, got, want)
		}
	}
	// An empty value is an empty blob, not a null.
	got = appendWriteExecute(nil, 0, id, 1, "k", 0, nil, 1, 5)
	ts := int64(5)
	want = libFrame(t, 0, &message.Execute{QueryId: id, Options: &message.QueryOptions{
		Consistency: 1, PositionalValues: values([]byte("k"), []byte{0, 0, 0, 0}, []byte{}), DefaultTimestamp: &ts}})
	if !bytes.Equal(got, want) {
		t.Errorf("write EXECUTE of an empty value:\n got %x\nwant %x", got, want)
	}
}

// resultFrame encodes a RESULT Rows reply with the library, with or without metadata and
// with a tracing id, a custom payload and warnings, and returns what frame() would: the stream, opcode and message body.
func resultFrame(t *testing.T, rows message.RowSet, cols int, noMetadata bool) (int16, primitive.OpCode, []byte) {
	t.Helper()
	md := &message.RowsMetadata{ColumnCount: int32(cols)}
	if !noMetadata {
		for i := range cols {
			md.Columns = append(md.Columns, &message.ColumnMetadata{Keyspace: "ks", Table: "t", Name: "value" + string(rune('0'+i)), Index: int32(i), Type: datatype.Blob})
		}
	}
	f := frame.NewFrame(protoVersion, 42, &message.RowsResult{Metadata: md, Data: rows})
	f.Header.IsResponse = true
	f.SetWarnings([]string{"careful", "very"})
	f.SetCustomPayload(map[string][]byte{"k": []byte("payload")})
	f.SetTracingId(&primitive.UUID{1, 2, 3})
	var buf bytes.Buffer
	if err := frame.NewCodec().EncodeFrame(f, &buf); err != nil {
		t.Fatalf("library encode: %v", err)
	}
	b := buf.Bytes()
	version, flags, stream, opcode, n := parseHeader(b)
	if version != 0x80|byte(protoVersion) || int(n) != len(b)-headerLen {
		t.Fatalf("header: version %#x length %d of %d", version, n, len(b))
	}
	body, err := skipBodyPrefix(flags, b[headerLen:])
	if err != nil {
		t.Fatal(err)
	}
	return stream, opcode, body
}

// TestParseRowsMatchesLibrary checks the in-place parser reads the rows the library
// encodes, nulls and empty cells included.
func TestParseRowsMatchesLibrary(t *testing.T) {
	rows := message.RowSet{
		{[]byte("a"), nil, []byte{}},
		{[]byte("bb"), []byte("cc"), []byte("ddd")},
	}
	for _, noMD := range []bool{false, true} {
		stream, opcode, body := resultFrame(t, rows, 3, noMD)
		if stream != 42 || opcode != primitive.OpCodeResult {
			t.Fatalf("stream %d opcode %v", stream, opcode)
		}
		rr, err := parseRows(body, 3)
		if err != nil {
			t.Fatal(err)
		}
		var got message.RowSet
		var buf [][]byte
		for {
			var ok bool
			if buf, ok = rr.next(buf); !ok {
				break
			}
			got = append(got, append(message.Row(nil), buf...))
		}
		if rr.err() != nil || len(got) != len(rows) {
			t.Fatalf("no metadata %v: %d rows, %v", noMD, len(got), rr.err())
		}
		for i := range rows {
			for j := range rows[i] {
				if !bytes.Equal(got[i][j], rows[i][j]) || (got[i][j] == nil) != (rows[i][j] == nil) {
					t.Errorf("no metadata %v: row %d cell %d = %q, want %q", noMD, i, j, got[i][j], rows[i][j])
				}
			}
		}
		if _, err := parseRows(body, 2); !errors.Is(err, errProtocol) {
			t.Errorf("rows of 3 columns read as 2: %v; want a protocol error", err)
		}
		if rr, err := parseRows(body[:len(body)-2], 3); err == nil {
			for ok := true; ok; _, ok = rr.next(nil) {
			}
			if !errors.Is(rr.err(), errProtocol) {
				t.Errorf("cut body: %v; want a protocol error", rr.err())
			}
		}
	}
}

// TestDecodeError checks ERROR replies come back with their code and class.
func TestDecodeError(t *testing.T) {
	for _, c := range []struct {
		m    message.Error
		code primitive.ErrorCode
	}{
		{&message.Overloaded{ErrorMessage: "busy"}, primitive.ErrorCodeOverloaded},
		{&message.Unavailable{ErrorMessage: "no", Consistency: primitive.ConsistencyLevelThree, Required: 3, Alive: 1}, primitive.ErrorCodeUnavailable},
		{&message.ReadTimeout{ErrorMessage: "slow", Consistency: 1, Received: 0, BlockFor: 1}, primitive.ErrorCodeReadTimeout},
		{&message.WriteTimeout{ErrorMessage: "slow", Consistency: 1, Received: 0, BlockFor: 1, WriteType: primitive.WriteTypeSimple}, primitive.ErrorCodeWriteTimeout},
		{&message.Invalid{ErrorMessage: "unconfigured table"}, primitive.ErrorCodeInvalid},
		{&message.Unprepared{ErrorMessage: "gone", Id: []byte{1}}, primitive.ErrorCodeUnprepared},
	} {
		f := frame.NewFrame(protoVersion, 1, c.m)
		f.Header.IsResponse = true
		var buf bytes.Buffer
		if err := frame.NewCodec().EncodeFrame(f, &buf); err != nil {
			t.Fatal(err)
		}
		err := decodeError(buf.Bytes()[headerLen:])
		var se *serverError
		if !errors.As(err, &se) || se.code != c.code || se.msg != c.m.GetErrorMessage() {
			t.Errorf("%T: %v", c.m, err)
		}
	}
}

// TestHotPathAllocations checks encoding a batch and parsing its replies allocates
// nothing once the buffers have grown.
func TestHotPathAllocations(t *testing.T) {
	id := bytes.Repeat([]byte{7}, 16)
	value := bytes.Repeat([]byte("v"), 100)
	_, _, body := resultFrame(t, message.RowSet{{value}}, 1, true)
	var w []byte
	var cells [][]byte
	allocs := testing.AllocsPerRun(100, func() {
		w = w[:0]
		for i := range 16 {
			w = appendReadExecute(w, int16(i), id, 10, "key-000001")
			w = appendWriteExecute(w, int16(i), id, 10, "key-000001", 0, value, 1, 1)
		}
		rr, err := parseRows(body, 1)
		if err != nil {
			t.Fatal(err)
		}
		for ok := true; ok; cells, ok = rr.next(cells) {
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch of 32 requests and a reply; want 0", allocs)
	}
}

// BenchmarkExecuteEncode compares the hot path's EXECUTE encoding with the library's, to
// show why the hot path does not use the library's encoder.
func BenchmarkExecuteEncode(b *testing.B) {
	id := bytes.Repeat([]byte{7}, 16)
	value := bytes.Repeat([]byte("v"), 100)
	ts := int64(1)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		var w []byte
		for b.Loop() {
			w = appendWriteExecute(w[:0], 1, id, 10, "key-000001", 0, value, 1, ts)
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		codec := frame.NewCodec()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			m := &message.Execute{QueryId: id, Options: &message.QueryOptions{Consistency: 10,
				PositionalValues: values([]byte("key-000001"), []byte{0, 0, 0, 0}, value), DefaultTimestamp: &ts}}
			if err := codec.EncodeFrame(frame.NewFrame(protoVersion, 1, m), &buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
