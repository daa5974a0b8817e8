// Package grpc is the ndbench driver for gRPC services: unary calls to any method,
// described by the server's reflection service or by a descriptor set file, with no
// generated code, so a service is benchmarked from its configuration alone.
//
// # Methods and messages
//
// read and write name full methods (package.Service/Method). A call's request is the
// JSON in readRequest (writeRequest) in protobuf's JSON mapping, the fields that never
// change, with the key set in field readKey (writeKey) and, for writes, the value in
// writeValue. A field path goes through nested messages with dots (item.key). The key
// field is a string or bytes field; the value field bytes, or string (ndbench's generated
// values are ASCII, so they are valid UTF-8; a proto3 string field refuses anything else).
//
// A read's value is the response field readValue (a path like item.value, or kvs.0.value
// into a list); a path through a message that is not set, or past the end of a list, is a
// miss. readFound, when set, names a bool field: false is a miss. With readValue empty the
// read returns no value and validation cannot check it.
//
//	drivers.grpc.target: 10.0.0.7:50051
//	drivers.grpc.read: ndbench.kv.v1.KV/Lookup
//	drivers.grpc.readRequest: '{"tenant": "bench"}'
//	drivers.grpc.readValue: item.value
//	drivers.grpc.readFound: found
//
// In a YAML file, quote the JSON of readRequest and writeRequest (or YAML reads it as a
// map), and quote metadata values that contain ": ".
//
// # Descriptions
//
// descriptors=reflection (default) asks the server's reflection service (grpc.reflection.v1)
// at Init for the files of the methods' services and their dependencies, with
// connectTimeout. Paths ending in .proto (comma-separated) are compiled at Init
// (github.com/bufbuild/protocompile), their imports found in protoImportPaths (default:
// each file's directory) or among the well-known types. Any other path is a
// FileDescriptorSet with imports included (protoc --include_imports -o FILE, buf build -o
// FILE). Messages are built with dynamicpb from the
// descriptions, and request and response fields are checked at Init, so a mistyped method
// or field fails before any load with the fields the message has.
//
// # Connections
//
// gRPC multiplexes calls over HTTP/2 connections: conns client connections (default 4),
// calls spread round robin. One connection carries up to the server's
// MAX_CONCURRENT_STREAMS calls at once (Go servers: unlimited by default; many others
// 100), and its single TCP stream is the limit of a fast server: raise conns when a busy
// generator does not reach the rate. TLS comes from the shared options (tls, tlsCAFile,
// ...); metadata is sent with every call, and authMetadata too, which is a secret
// (authorization: Bearer TOKEN).
//
// # Errors
//
// Status NOT_FOUND is a miss for reads. RESOURCE_EXHAUSTED is throttled; UNAVAILABLE
// (refused, reset, a server going away) is unavailable; DEADLINE_EXCEEDED and the op's
// deadline are timeout; INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE,
// UNIMPLEMENTED, PERMISSION_DENIED, UNAUTHENTICATED and ALREADY_EXISTS are rejected; the
// others are other. Each op's context is the call's, so a call ends at the op's deadline.
//
// # Not yet
//
// Streaming methods and more operations than read and write (the http driver's extra
// slots) are not built.
package grpc
