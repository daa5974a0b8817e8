package gremlin

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// GraphSON 3.0, TinkerPop's typed JSON, for servers whose configuration offers no
// GraphBinary serializer (JanusGraph configurations before 0.6 list Gryo and GraphSON
// only). The same subset as the GraphBinary codec: requests of strings, longs and maps;
// replies of scalars, lists, sets and maps.

const graphSON3Mime = "application/vnd.gremlin-v3.0+json"

// codec is a serialization the driver speaks.
type codec struct {
	name   string
	encode func(b []byte, id requestID, op, processor string, args ...any) ([]byte, error)
	decode func([]byte) (response, error)
}

var codecs = map[string]*codec{
	"graphbinary": {name: graphBinaryMime, encode: appendRequest, decode: decodeResponse},
	"graphson3":   {name: graphSON3Mime, encode: appendGraphSONRequest, decode: decodeGraphSONResponse},
}

// String formats an id as a UUID (8-4-4-4-12 hex digits).
func (id requestID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// appendGraphSONRequest encodes a request: the MIME type header, then the request
// message as GraphSON 3 JSON.
func appendGraphSONRequest(b []byte, id requestID, op, processor string, args ...any) ([]byte, error) {
	b = append(b, byte(len(graphSON3Mime)))
	b = append(b, graphSON3Mime...)
	b = append(b, `{"requestId":{"@type":"g:UUID","@value":"`...)
	b = append(b, id.String()...)
	b = append(b, `"},"op":`...)
	b = strconv.AppendQuote(b, op)
	b = append(b, `,"processor":`...)
	b = strconv.AppendQuote(b, processor)
	b = append(b, `,"args":`...)
	b, err := appendGraphSON(b, kv(args))
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendGraphSON writes a typed GraphSON 3 value.
func appendGraphSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		s, err := json.Marshal(x) // JSON escaping (strconv.Quote's \x escapes are not JSON)
		return append(b, s...), err
	case int64:
		b = append(b, `{"@type":"g:Int64","@value":`...)
		return append(strconv.AppendInt(b, x, 10), '}'), nil
	case int32:
		b = append(b, `{"@type":"g:Int32","@value":`...)
		return append(strconv.AppendInt(b, int64(x), 10), '}'), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case []any:
		b = append(b, `{"@type":"g:List","@value":[`...)
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendGraphSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, "]}"...), nil
	case kv:
		b = append(b, `{"@type":"g:Map","@value":[`...)
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendGraphSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, "]}"...), nil
	}
	return nil, fmt.Errorf("graphson: cannot encode %T", v)
}

// graphSONResponse is a response message's shape.
type graphSONResponse struct {
	RequestID json.RawMessage `json:"requestId"`
	Status    struct {
		Message string `json:"message"`
		Code    int32  `json:"code"`
	} `json:"status"`
	Result struct {
		Data json.RawMessage `json:"data"`
	} `json:"result"`
}

// decodeGraphSONResponse parses a response message.
func decodeGraphSONResponse(b []byte) (response, error) {
	var r response
	var m graphSONResponse
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return r, fmt.Errorf("graphson: %w", err)
	}
	id, err := graphSONValue(m.RequestID, 0)
	if err != nil {
		return r, fmt.Errorf("graphson: request id: %w", err)
	}
	if s, ok := id.(string); ok && s != "" {
		if r.id, err = parseUUID(s); err != nil {
			return r, err
		}
	}
	r.status, r.message = m.Status.Code, m.Status.Message
	if len(m.Result.Data) == 0 {
		return r, nil
	}
	v, err := graphSONValue(m.Result.Data, 0)
	if err != nil {
		return r, fmt.Errorf("graphson: result data: %w", err)
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

func parseUUID(s string) (requestID, error) {
	var id requestID
	h := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			h = append(h, s[i])
		}
	}
	if len(h) != 32 {
		return id, fmt.Errorf("graphson: %q is not a UUID", s)
	}
	if _, err := hex.Decode(id[:], h); err != nil {
		return id, fmt.Errorf("graphson: %q is not a UUID: %w", s, err)
	}
	return id, nil
}

// graphSONValue converts a typed GraphSON 3 value: numbers become int64 or float64, lists
// and sets []any, maps map[string]any, UUIDs their text; plain JSON passes through.
func graphSONValue(raw json.RawMessage, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("graphson: values nested too deep")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		return graphSONList(items, depth)
	case '{':
	default:
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if n, ok := v.(json.Number); ok {
			return number(n, "")
		}
		return v, nil
	}
	var typed struct {
		Type  string          `json:"@type"`
		Value json.RawMessage `json:"@value"`
	}
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, err
	}
	if typed.Type == "" { // a plain JSON object
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			v, err := graphSONValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	switch typed.Type {
	case "g:Int32", "g:Int64", "g:Double", "g:Float":
		return number(json.Number(bytes.TrimSpace(typed.Value)), typed.Type)
	case "g:UUID":
		var s string
		err := json.Unmarshal(typed.Value, &s)
		return s, err
	case "g:List", "g:Set":
		var items []json.RawMessage
		if err := json.Unmarshal(typed.Value, &items); err != nil {
			return nil, err
		}
		return graphSONList(items, depth)
	case "g:Map":
		var items []json.RawMessage
		if err := json.Unmarshal(typed.Value, &items); err != nil {
			return nil, err
		}
		if len(items)%2 != 0 {
			return nil, errors.New("graphson: g:Map with an odd number of entries")
		}
		out := make(map[string]any, len(items)/2)
		for i := 0; i < len(items); i += 2 {
			k, err := graphSONValue(items[i], depth+1)
			if err != nil {
				return nil, err
			}
			v, err := graphSONValue(items[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("graphson: unsupported type %s in a reply", typed.Type)
}

func graphSONList(items []json.RawMessage, depth int) ([]any, error) {
	out := make([]any, 0, len(items))
	for _, e := range items {
		v, err := graphSONValue(e, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// number converts a JSON number: integers to int64, others (and g:Double, g:Float) to
// float64.
func number(n json.Number, typ string) (any, error) {
	if typ != "g:Double" && typ != "g:Float" {
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("graphson: bad number %q", n)
	}
	return f, nil
}
