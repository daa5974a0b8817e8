package grpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gogrpc "google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "grpc",
		Summary:    "gRPC unary calls to any method, described by server reflection or a descriptor set",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
	})
}

// Options configure the grpc driver.
type Options struct {
	Target           string      `opt:"target" default:"127.0.0.1:50051" reach:"target" help:"server address host:port, or any gRPC target (dns:///host:port)"`
	Descriptors      string      `opt:"descriptors" default:"reflection" reach:"path" help:"service descriptions: reflection (asked from the server), .proto files (comma-separated), or the path of a FileDescriptorSet with imports (protoc --include_imports -o FILE)"`
	ProtoImportPaths string      `opt:"protoImportPaths" default:"" reach:"path" help:"with .proto files: directories imports are found in, comma-separated (default: each file's directory); google/protobuf/* are built in"`
	Conns            int         `opt:"conns" default:"4" min:"1" max:"1024" help:"client connections (HTTP/2); calls spread over them round robin"`
	Metadata         string      `opt:"metadata" default:"" help:"metadata of every call, name: value, separated by | or newlines"`
	AuthMetadata     string      `opt:"authMetadata" default:"" secret:"true" help:"metadata with credentials sent with every call, e.g. authorization: Bearer TOKEN"`
	MaxMessageSize   driver.Size `opt:"maxMessageSize" default:"16MiB" min:"1" max:"1GiB" help:"largest message sent or received"`
	TLS              driver.TLSOptions
	Timeouts         driver.TimeoutOptions `omit:"timeout" connectTimeout.help:"timeout to connect and to read the service descriptions at Init"`

	Read         string `opt:"read" default:"ndbench.kv.v1.KV/Get" help:"Driver.Read: the full method package.Service/Method; empty = not configured"`
	ReadRequest  string `opt:"readRequest" default:"{}" help:"read: the request's fixed fields as protobuf JSON"`
	ReadKey      string `opt:"readKey" default:"key" help:"read: the request field (path a.b) that gets the key; string or bytes"`
	ReadValue    string `opt:"readValue" default:"value" help:"read: the response field (path a.b, list index a.0.b) holding the value; an unset message or a short list on the path is a miss; empty = no value"`
	ReadFound    string `opt:"readFound" default:"" help:"read: a response bool field; false is a miss"`
	Write        string `opt:"write" default:"ndbench.kv.v1.KV/Put" help:"Driver.Write: the full method package.Service/Method; empty = not configured"`
	WriteRequest string `opt:"writeRequest" default:"{}" help:"write: the request's fixed fields as protobuf JSON"`
	WriteKey     string `opt:"writeKey" default:"key" help:"write: the request field that gets the key; string or bytes"`
	WriteValue   string `opt:"writeValue" default:"value" help:"write: the request field that gets the value; bytes (or string for UTF-8 values)"`
}

// Validate checks the option combinations that need no server.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	for _, m := range []struct{ name, v string }{{"read", o.Read}, {"write", o.Write}} {
		if m.v == "" {
			continue
		}
		svc, meth, ok := strings.Cut(m.v, "/")
		if !ok || svc == "" || meth == "" || strings.Contains(meth, "/") {
			errs = append(errs, &driver.FieldError{Field: m.name, Value: m.v, Allowed: "a full method package.Service/Method, or empty"})
		}
	}
	for _, r := range []struct{ name, v string }{{"readRequest", o.ReadRequest}, {"writeRequest", o.WriteRequest}} {
		if !strings.HasPrefix(strings.TrimSpace(r.v), "{") {
			errs = append(errs, &driver.FieldError{Field: r.name, Value: r.v, Allowed: "a JSON object in protobuf's JSON mapping, e.g. {} or {\"tenant\": \"bench\"}"})
		}
	}
	for _, h := range []struct{ name, v string }{{"metadata", o.Metadata}, {"authMetadata", o.AuthMetadata}} {
		if _, err := parseMetadata(h.v); err != nil {
			errs = append(errs, &driver.FieldError{Field: h.name, Value: driver.Shown(h.name == "authMetadata", h.v), Allowed: err.Error()})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// parseMetadata reads "name: value" pairs separated by | or newlines.
func parseMetadata(s string) ([]string, error) {
	var kv []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == '\n' }) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("name: value pairs separated by | or newlines (a pair without a name or ':')")
		}
		kv = append(kv, name, strings.TrimSpace(value))
	}
	return kv, nil
}

// call is one configured method with its prepared messages.
type call struct {
	method    string // "/package.Service/Method"
	req, resp protoreflect.MessageDescriptor
	proto     *dynamicpb.Message // the fixed fields; cloned into each request
	key       []protoreflect.FieldDescriptor
	value     []protoreflect.FieldDescriptor // write: request field; read: unused
	out       []pathStep                     // read: response value path
	found     []pathStep                     // read: response bool path
}

// pathStep is one step of a response path: a field, then an index when the field is a
// list.
type pathStep struct {
	fd    protoreflect.FieldDescriptor
	index int // -1 when the field is not a list
}

// Driver is the grpc driver. It is safe for concurrent use after Init.
type Driver struct {
	opts        Options
	conns       []*gogrpc.ClientConn
	next        atomic.Uint32
	md          metadata.MD
	read, write *call
	closed      atomic.Bool
}

// errClosed is returned by operations after Close.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("grpc: driver is closed"))

// Init connects, reads the service descriptions and prepares the configured calls.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	d.opts = *o
	creds := insecure.NewCredentials()
	if o.TLS.Enable {
		tc, err := o.TLS.Config()
		if err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc tls: %w", err))
		}
		creds = credentials.NewTLS(tc)
	}
	kv, _ := parseMetadata(o.Metadata)
	auth, _ := parseMetadata(o.AuthMetadata)
	d.md = metadata.Pairs(append(kv, auth...)...)
	size := int(min(int64(o.MaxMessageSize), int64(1<<31-1)))
	for range o.Conns {
		c, err := gogrpc.NewClient(o.Target, gogrpc.WithTransportCredentials(creds),
			gogrpc.WithDefaultCallOptions(gogrpc.MaxCallRecvMsgSize(size), gogrpc.MaxCallSendMsgSize(size)))
		if err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc client for %s: %w", o.Target, err))
		}
		d.conns = append(d.conns, c)
	}
	ictx, cancel := context.WithTimeout(ctx, o.Timeouts.Connect)
	defer cancel()
	if err := d.waitReady(ictx); err != nil {
		return err
	}
	var files *protoregistry.Files
	if o.Descriptors == "reflection" {
		var services []string
		for _, m := range []string{o.Read, o.Write} {
			if svc, _, ok := strings.Cut(m, "/"); ok {
				services = append(services, svc)
			}
		}
		files, err = fromReflection(ictx, d.conns[0], services)
		var unknown *unknownServiceError
		if errors.As(err, &unknown) {
			slot, method := "read", o.Read
			if !strings.HasPrefix(o.Read, unknown.service+"/") {
				slot, method = "write", o.Write
			}
			return &driver.FieldError{Field: slot, Value: method, Allowed: "a method of a service the server has: " + strings.Join(unknown.known, ", ")}
		}
		if err != nil {
			err = fmt.Errorf("grpc: read the service descriptions from %s by reflection (descriptors=reflection; a server without it needs .proto files or a descriptor set file in descriptors): %w", o.Target, err)
			if status.Code(err) == codes.Unimplemented || errors.Is(err, io.EOF) {
				// No reflection service: a configuration matter, not an outage.
				return driver.Wrap(driver.ClassRejected, err)
			}
			return classify(err)
		}
	} else if strings.HasSuffix(o.Descriptors, ".proto") {
		if files, err = fromProtoFiles(ictx, o.Descriptors, o.ProtoImportPaths); err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc descriptors: %w", err))
		}
	} else {
		b, err := os.ReadFile(o.Descriptors)
		if err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc descriptors: %w", err))
		}
		var set descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(b, &set); err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc descriptors: %s is not a binary FileDescriptorSet (protoc --include_imports -o FILE): %w", o.Descriptors, err))
		}
		if files, err = buildFiles(set.File); err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("grpc descriptors %s: %w", o.Descriptors, err))
		}
	}
	if o.Read != "" {
		if d.read, err = prepare(files, "read", o.Read, o.ReadRequest, o.ReadKey, "", o.ReadValue, o.ReadFound); err != nil {
			return err
		}
	}
	if o.Write != "" {
		if d.write, err = prepare(files, "write", o.Write, o.WriteRequest, o.WriteKey, o.WriteValue, "", ""); err != nil {
			return err
		}
	}
	return nil
}

// waitReady connects the first connection, so that a wrong address fails Init.
func (d *Driver) waitReady(ctx context.Context) error {
	c := d.conns[0]
	c.Connect()
	for {
		s := c.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !c.WaitForStateChange(ctx, s) {
			return driver.Wrap(driver.ClassUnavailable, fmt.Errorf("grpc: connect to %s: still %s after connectTimeout %v%s", d.opts.Target, s, d.opts.Timeouts.Connect, d.lastDialError(c)))
		}
	}
}

// lastDialError asks the connection why it is not ready: a call that does not wait for
// readiness fails with the last dial or handshake error (refused, a TLS mismatch, not
// HTTP/2).
func (d *Driver) lastDialError(c *gogrpc.ClientConn) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.Invoke(ctx, "/grpc.health.v1.Health/Check", &emptypb.Empty{}, &emptypb.Empty{})
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable && st.Message() != "" {
		return ": " + st.Message()
	}
	return ""
}

// prepare resolves a method and its fields. Errors name the option and what the message
// offers.
func prepare(files *protoregistry.Files, slot, method, request, key, value, out, found string) (*call, error) {
	svc, name, _ := strings.Cut(method, "/")
	desc, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	sd, ok := desc.(protoreflect.ServiceDescriptor)
	if err != nil || !ok {
		return nil, &driver.FieldError{Field: slot, Value: method, Allowed: "a service the descriptions have: " + strings.Join(serviceNames(files), ", ")}
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		var names []string
		for i := 0; i < sd.Methods().Len(); i++ {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, &driver.FieldError{Field: slot, Value: method, Allowed: "a method of " + svc + ": " + strings.Join(names, ", ")}
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, &driver.FieldError{Field: slot, Value: method, Allowed: "a unary method (streaming methods are not supported)"}
	}
	c := &call{method: "/" + svc + "/" + name, req: md.Input(), resp: md.Output()}
	c.proto = dynamicpb.NewMessage(c.req)
	if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(request), c.proto); err != nil {
		return nil, &driver.FieldError{Field: slot + "Request", Value: request, Allowed: "JSON of message " + string(c.req.FullName()) + ": " + err.Error()}
	}
	if c.key, err = fieldPath(c.req, key); err != nil {
		return nil, &driver.FieldError{Field: slot + "Key", Value: key, Allowed: err.Error()}
	}
	if k := c.key[len(c.key)-1].Kind(); k != protoreflect.StringKind && k != protoreflect.BytesKind {
		return nil, &driver.FieldError{Field: slot + "Key", Value: key, Allowed: "a string or bytes field (this one is " + k.String() + ")"}
	}
	if value != "" {
		if c.value, err = fieldPath(c.req, value); err != nil {
			return nil, &driver.FieldError{Field: slot + "Value", Value: value, Allowed: err.Error()}
		}
		if k := c.value[len(c.value)-1].Kind(); k != protoreflect.StringKind && k != protoreflect.BytesKind {
			return nil, &driver.FieldError{Field: slot + "Value", Value: value, Allowed: "a bytes or string field (this one is " + k.String() + ")"}
		}
	}
	if out != "" {
		if c.out, err = responsePath(c.resp, out); err != nil {
			return nil, &driver.FieldError{Field: "readValue", Value: out, Allowed: err.Error()}
		}
		if k := c.out[len(c.out)-1].fd.Kind(); k != protoreflect.StringKind && k != protoreflect.BytesKind {
			return nil, &driver.FieldError{Field: "readValue", Value: out, Allowed: "a bytes or string field (this one is " + k.String() + ")"}
		}
	}
	if found != "" {
		if c.found, err = responsePath(c.resp, found); err != nil {
			return nil, &driver.FieldError{Field: "readFound", Value: found, Allowed: err.Error()}
		}
		if k := c.found[len(c.found)-1].fd.Kind(); k != protoreflect.BoolKind {
			return nil, &driver.FieldError{Field: "readFound", Value: found, Allowed: "a bool field (this one is " + k.String() + ")"}
		}
	}
	return c, nil
}

// serviceNames lists the services of files, for errors.
func serviceNames(files *protoregistry.Files) []string {
	var out []string
	files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			if name := string(f.Services().Get(i).FullName()); !strings.HasPrefix(name, "grpc.reflection.") {
				out = append(out, name)
			}
		}
		return true
	})
	if len(out) == 0 {
		out = []string{"(none)"}
	}
	return out
}

// fieldNames lists the fields of md, for errors.
func fieldNames(md protoreflect.MessageDescriptor) string {
	var names []string
	for i := 0; i < md.Fields().Len(); i++ {
		names = append(names, string(md.Fields().Get(i).Name()))
	}
	if len(names) == 0 {
		return "(it has none)"
	}
	return strings.Join(names, ", ")
}

// fieldPath resolves a request path a.b.c of singular fields through messages.
func fieldPath(md protoreflect.MessageDescriptor, path string) ([]protoreflect.FieldDescriptor, error) {
	var out []protoreflect.FieldDescriptor
	for i, part := range strings.Split(path, ".") {
		fd := md.Fields().ByName(protoreflect.Name(part))
		if fd == nil {
			return nil, fmt.Errorf("a field of %s: %s", md.FullName(), fieldNames(md))
		}
		if fd.IsList() || fd.IsMap() {
			return nil, fmt.Errorf("a path of singular fields (%s is a list or map)", part)
		}
		out = append(out, fd)
		if i < len(strings.Split(path, "."))-1 {
			if fd.Message() == nil {
				return nil, fmt.Errorf("a path through messages (%s is %s)", part, fd.Kind())
			}
			md = fd.Message()
		}
	}
	return out, nil
}

// responsePath resolves a response path, where a list field is followed by an index.
func responsePath(md protoreflect.MessageDescriptor, path string) ([]pathStep, error) {
	parts := strings.Split(path, ".")
	var out []pathStep
	for i := 0; i < len(parts); i++ {
		fd := md.Fields().ByName(protoreflect.Name(parts[i]))
		if fd == nil {
			return nil, fmt.Errorf("a field of %s: %s", md.FullName(), fieldNames(md))
		}
		if fd.IsMap() {
			return nil, fmt.Errorf("a path without maps (%s is a map)", parts[i])
		}
		step := pathStep{fd: fd, index: -1}
		if fd.IsList() {
			if i+1 >= len(parts) {
				return nil, fmt.Errorf("an index after list field %s (e.g. %s.0)", parts[i], parts[i])
			}
			n, err := strconv.Atoi(parts[i+1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("an index after list field %s (e.g. %s.0), not %q", parts[i], parts[i], parts[i+1])
			}
			step.index = n
			i++
		}
		out = append(out, step)
		if i < len(parts)-1 {
			if fd.Message() == nil {
				return nil, fmt.Errorf("a path through messages (%s is %s)", parts[i], fd.Kind())
			}
			md = fd.Message()
		}
	}
	return out, nil
}

// set stores v (a string or bytes) in the field at path, creating the messages on it.
func set(m protoreflect.Message, path []protoreflect.FieldDescriptor, v []byte, str string) {
	for _, fd := range path[:len(path)-1] {
		m = m.Mutable(fd).Message()
	}
	fd := path[len(path)-1]
	if fd.Kind() == protoreflect.BytesKind {
		if v == nil {
			v = []byte(str)
		}
		m.Set(fd, protoreflect.ValueOfBytes(v))
		return
	}
	if v != nil {
		str = string(v)
	}
	m.Set(fd, protoreflect.ValueOfString(str))
}

// get follows a response path; ok is false when a message on it is unset or a list is
// too short.
func get(m protoreflect.Message, path []pathStep) (protoreflect.Value, bool) {
	for i, st := range path {
		last := i == len(path)-1
		if st.fd.Message() != nil && st.index < 0 && !m.Has(st.fd) {
			return protoreflect.Value{}, false
		}
		v := m.Get(st.fd)
		if st.index >= 0 {
			l := v.List()
			if st.index >= l.Len() {
				return protoreflect.Value{}, false
			}
			v = l.Get(st.index)
		}
		if last {
			return v, true
		}
		m = v.Message()
	}
	return protoreflect.Value{}, false
}

// conn picks the next connection, round robin.
func (d *Driver) conn() *gogrpc.ClientConn {
	return d.conns[int(d.next.Add(1))%len(d.conns)]
}

func (d *Driver) invoke(ctx context.Context, c *call, req, resp *dynamicpb.Message) error {
	if len(d.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, d.md)
	}
	return d.conn().Invoke(ctx, c.method, req, resp)
}

// Read calls the read method with the key and returns the response's value.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if d.closed.Load() {
		return nil, errClosed
	}
	c := d.read
	if c == nil {
		return nil, driver.Wrap(driver.ClassRejected, errors.New("grpc: no read method configured (option read)"))
	}
	req := proto.Clone(c.proto).(*dynamicpb.Message)
	set(req, c.key, nil, key)
	resp := dynamicpb.NewMessage(c.resp)
	if err := d.invoke(ctx, c, req, resp); err != nil {
		if status.Code(err) == codes.NotFound {
			return nil, driver.ErrNotFound
		}
		return nil, classify(fmt.Errorf("grpc %s %s: %w", c.method, key, err))
	}
	if c.found != nil {
		if v, ok := get(resp, c.found); !ok || !v.Bool() {
			return nil, driver.ErrNotFound
		}
	}
	if c.out == nil {
		return nil, nil
	}
	v, ok := get(resp, c.out)
	if !ok {
		return nil, driver.ErrNotFound
	}
	if c.out[len(c.out)-1].fd.Kind() == protoreflect.BytesKind {
		return v.Bytes(), nil
	}
	return []byte(v.String()), nil
}

// Write calls the write method with the key and value.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if d.closed.Load() {
		return errClosed
	}
	c := d.write
	if c == nil {
		return driver.Wrap(driver.ClassRejected, errors.New("grpc: no write method configured (option write)"))
	}
	req := proto.Clone(c.proto).(*dynamicpb.Message)
	set(req, c.key, nil, key)
	if c.value != nil {
		// The message is marshalled before Invoke returns, and dropped after it: the
		// engine's buffer is not kept.
		set(req, c.value, value, "")
	}
	resp := dynamicpb.NewMessage(c.resp)
	if err := d.invoke(ctx, c, req, resp); err != nil {
		return classify(fmt.Errorf("grpc %s %s: %w", c.method, key, err))
	}
	return nil
}

// classify maps a call's error to its class (see the package doc).
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return driver.Wrap(driver.ClassTimeout, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return driver.Wrap(driver.Classify(err), err)
	}
	switch st.Code() {
	case codes.ResourceExhausted:
		return driver.Wrap(driver.ClassThrottled, err)
	case codes.Unavailable:
		return driver.Wrap(driver.ClassUnavailable, err)
	case codes.DeadlineExceeded:
		return driver.Wrap(driver.ClassTimeout, err)
	case codes.Canceled:
		return driver.Wrap(driver.Classify(context.Canceled), err)
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented,
		codes.PermissionDenied, codes.Unauthenticated, codes.AlreadyExists, codes.NotFound:
		return driver.Wrap(driver.ClassRejected, err)
	}
	return driver.Wrap(driver.ClassOther, err)
}

// ConnectionInfo describes the target and the methods.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{"target": d.opts.Target, "conns": strconv.Itoa(d.opts.Conns),
		"descriptors": d.opts.Descriptors, "tls": strconv.FormatBool(d.opts.TLS.Enable)}
	if d.read != nil {
		info["read"] = d.read.method
	}
	if d.write != nil {
		info["write"] = d.write.method
	}
	return info
}

// Close closes every connection.
func (d *Driver) Close() error {
	d.closed.Store(true)
	var errs []error
	for _, c := range d.conns {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close grpc connection to %s: %w", d.opts.Target, err))
		}
	}
	return errors.Join(errs...)
}
