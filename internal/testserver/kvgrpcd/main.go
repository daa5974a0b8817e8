// Command kvgrpcd is a small key-value gRPC service for the integration tests of the grpc
// driver, run by internal/testserver as a separate process (so that killing or pausing it
// is a real outage, as for the other stores). Its service is described at run time, with
// no generated code, so the driver meets it only through what a real server offers:
// server reflection (on unless -reflection=false) or a descriptor set file (-descriptors,
// written at start):
//
//	package ndbench.kv.v1;
//	service KV {
//	  rpc Get(GetRequest) returns (GetResponse);        // NOT_FOUND when absent
//	  rpc Put(PutRequest) returns (PutResponse);
//	  rpc Lookup(GetRequest) returns (LookupResponse);  // found=false when absent
//	}
//	message GetRequest { string key = 1; string tenant = 2; }
//	message GetResponse { bytes value = 1; }
//	message PutRequest { string key = 1; bytes value = 2; string tenant = 3; }
//	message PutResponse {}
//	message LookupResponse { bool found = 1; Item item = 2; }
//	message Item { string key = 1; bytes value = 2; }
//
// A key of the form "code-N-..." gets gRPC status N and no other effect, so tests can
// inject throttling (8, RESOURCE_EXHAUSTED), unavailability (14) and rejections (3). A
// request whose tenant is not empty stores under tenant/key.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "listen address")
	refl := flag.Bool("reflection", true, "serve gRPC server reflection")
	descOut := flag.String("descriptors", "", "write the service's FileDescriptorSet (binary) to this file")
	flag.Parse()
	if err := run(*addr, *refl, *descOut); err != nil {
		fmt.Fprintln(os.Stderr, "kvgrpcd:", err)
		os.Exit(1)
	}
}

// fileProto describes the service, as protoc would from the .proto in the package doc.
func fileProto() *descriptorpb.FileDescriptorProto {
	str, byt, bol, msg := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum(),
		descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	field := func(name string, n int32, t *descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: t, Label: opt, JsonName: proto.String(name)}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	message := func(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
	}
	method := func(name, in, out string) *descriptorpb.MethodDescriptorProto {
		return &descriptorpb.MethodDescriptorProto{Name: proto.String(name), InputType: proto.String(".ndbench.kv.v1." + in), OutputType: proto.String(".ndbench.kv.v1." + out)}
	}
	return &descriptorpb.FileDescriptorProto{
		Name: proto.String("ndbench/kv/v1/kv.proto"), Package: proto.String("ndbench.kv.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			message("GetRequest", field("key", 1, str, ""), field("tenant", 2, str, "")),
			message("GetResponse", field("value", 1, byt, "")),
			message("PutRequest", field("key", 1, str, ""), field("value", 2, byt, ""), field("tenant", 3, str, "")),
			message("PutResponse"),
			message("LookupResponse", field("found", 1, bol, ""), field("item", 2, msg, ".ndbench.kv.v1.Item")),
			message("Item", field("key", 1, str, ""), field("value", 2, byt, "")),
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("KV"), Method: []*descriptorpb.MethodDescriptorProto{
			method("Get", "GetRequest", "GetResponse"), method("Put", "PutRequest", "PutResponse"), method("Lookup", "GetRequest", "LookupResponse"),
		}}},
	}
}

// kv is the data: a map under a lock is plenty for tests.
type kv struct {
	mu    sync.RWMutex
	m     map[string][]byte
	file  protoreflect.FileDescriptor
	types map[string]protoreflect.MessageDescriptor
}

func run(addr string, refl bool, descOut string) error {
	fdp := fileProto()
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		return fmt.Errorf("build the service descriptor: %w", err)
	}
	if descOut != "" {
		b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fdp}})
		if err != nil {
			return err
		}
		if err := os.WriteFile(descOut, b, 0o644); err != nil {
			return fmt.Errorf("write descriptors: %w", err)
		}
	}
	s := &kv{m: map[string][]byte{}, file: fd, types: map[string]protoreflect.MessageDescriptor{}}
	msgs := fd.Messages()
	for i := 0; i < msgs.Len(); i++ {
		s.types[string(msgs.Get(i).Name())] = msgs.Get(i)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "ndbench.kv.v1.KV",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Get", Handler: s.handler("GetRequest", s.get)},
			{MethodName: "Put", Handler: s.handler("PutRequest", s.put)},
			{MethodName: "Lookup", Handler: s.handler("GetRequest", s.lookup)},
		},
		Metadata: "ndbench/kv/v1/kv.proto",
	}, s)
	if refl {
		files := &protoregistry.Files{}
		if err := files.RegisterFile(fd); err != nil {
			return err
		}
		rs := reflection.NewServerV1(reflection.ServerOptions{Services: srv, DescriptorResolver: resolver{files}})
		reflectionpb.RegisterServerReflectionServer(srv, rs)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
		<-ch
		srv.Stop()
	}()
	log.Printf("kvgrpcd serving on %s (reflection %v)", addr, refl)
	return srv.Serve(ln)
}

// resolver finds the service's own files first, then the global registry's.
type resolver struct{ own *protoregistry.Files }

func (r resolver) FindFileByPath(p string) (protoreflect.FileDescriptor, error) {
	if fd, err := r.own.FindFileByPath(p); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(p)
}

func (r resolver) FindDescriptorByName(n protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := r.own.FindDescriptorByName(n); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(n)
}

// handler decodes the request as a dynamic message of type in and calls f.
func (s *kv) handler(in string, f func(context.Context, *dynamicpb.Message) (proto.Message, error)) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(s.types[in])
		if err := dec(req); err != nil {
			return nil, err
		}
		key := s.key(req)
		if code, ok := injected(key); ok {
			return nil, status.Errorf(code, "injected status %d for %s", code, key)
		}
		return f(ctx, req)
	}
}

// key returns the request's storage key: tenant/key when a tenant is given.
func (s *kv) key(req *dynamicpb.Message) string {
	fs := req.Descriptor().Fields()
	key := req.Get(fs.ByName("key")).String()
	if t := fs.ByName("tenant"); t != nil {
		if tenant := req.Get(t).String(); tenant != "" {
			return tenant + "/" + key
		}
	}
	return key
}

// injected reads a status code from a key "code-N-...".
func injected(key string) (codes.Code, bool) {
	rest, ok := strings.CutPrefix(key, "code-")
	if !ok {
		return 0, false
	}
	n, _, _ := strings.Cut(rest, "-")
	c, err := strconv.Atoi(n)
	if err != nil || c <= 0 || c > 16 {
		return 0, false
	}
	return codes.Code(c), true
}

func (s *kv) get(_ context.Context, req *dynamicpb.Message) (proto.Message, error) {
	key := s.key(req)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no key %q", key)
	}
	out := dynamicpb.NewMessage(s.types["GetResponse"])
	out.Set(out.Descriptor().Fields().ByName("value"), protoreflect.ValueOfBytes(v))
	return out, nil
}

func (s *kv) put(_ context.Context, req *dynamicpb.Message) (proto.Message, error) {
	key := s.key(req)
	v := req.Get(req.Descriptor().Fields().ByName("value")).Bytes()
	s.mu.Lock()
	s.m[key] = append([]byte(nil), v...)
	s.mu.Unlock()
	return dynamicpb.NewMessage(s.types["PutResponse"]), nil
}

func (s *kv) lookup(_ context.Context, req *dynamicpb.Message) (proto.Message, error) {
	key := s.key(req)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	out := dynamicpb.NewMessage(s.types["LookupResponse"])
	fs := out.Descriptor().Fields()
	out.Set(fs.ByName("found"), protoreflect.ValueOfBool(ok))
	if ok {
		item := dynamicpb.NewMessage(s.types["Item"])
		ifs := item.Descriptor().Fields()
		item.Set(ifs.ByName("key"), protoreflect.ValueOfString(key))
		item.Set(ifs.ByName("value"), protoreflect.ValueOfBytes(v))
		out.Set(fs.ByName("item"), protoreflect.ValueOfMessage(item))
	}
	return out, nil
}
