package grpc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogrpc "google.golang.org/grpc"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	// The well-known types, which services import without the server sending them.
	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/fieldmaskpb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// fromReflection asks the server's reflection service for the files defining services,
// and every file they import, and builds them.
func fromReflection(ctx context.Context, conn *gogrpc.ClientConn, services []string) (*protoregistry.Files, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.CloseSend() }()
	got := map[string]*descriptorpb.FileDescriptorProto{}
	ask := func(req *reflectionpb.ServerReflectionRequest) error {
		if err := stream.Send(req); err != nil {
			return err
		}
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return fmt.Errorf("reflection: %s (code %d)", e.GetErrorMessage(), e.GetErrorCode())
		}
		fr := resp.GetFileDescriptorResponse()
		if fr == nil {
			return errors.New("reflection: the answer holds no file descriptors")
		}
		for _, b := range fr.GetFileDescriptorProto() {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("reflection: decode a file descriptor: %w", err)
			}
			got[fd.GetName()] = fd
		}
		return nil
	}
	for _, svc := range services {
		if err := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}}); err != nil {
			if known, lerr := listServices(stream); lerr == nil {
				return nil, &unknownServiceError{service: svc, known: known}
			}
			return nil, fmt.Errorf("service %s: %w", svc, err)
		}
	}
	// Servers usually send the imports with the file; ask for any that are missing and
	// not known here (the well-known types are).
	for {
		var missing string
		for _, fd := range got {
			for _, dep := range fd.GetDependency() {
				if _, ok := got[dep]; ok {
					continue
				}
				if _, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
					continue
				}
				missing = dep
			}
		}
		if missing == "" {
			break
		}
		if err := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileByFilename{FileByFilename: missing}}); err != nil {
			return nil, fmt.Errorf("file %s: %w", missing, err)
		}
		if _, ok := got[missing]; !ok {
			return nil, fmt.Errorf("reflection: the server did not send %s", missing)
		}
	}
	fds := make([]*descriptorpb.FileDescriptorProto, 0, len(got))
	for _, fd := range got {
		fds = append(fds, fd)
	}
	return buildFiles(fds)
}

// buildFiles builds file descriptors in dependency order; imports not among them are
// looked up in the program's own registry (the well-known types).
func buildFiles(fds []*descriptorpb.FileDescriptorProto) (*protoregistry.Files, error) {
	byName := make(map[string]*descriptorpb.FileDescriptorProto, len(fds))
	for _, fd := range fds {
		byName[fd.GetName()] = fd
	}
	files := &protoregistry.Files{}
	res := resolver{own: files}
	state := map[string]int{} // 1 = building, 2 = built
	var build func(name string) error
	build = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("file %s imports itself", name)
		case 2:
			return nil
		}
		fd, ok := byName[name]
		if !ok {
			if _, err := protoregistry.GlobalFiles.FindFileByPath(name); err == nil {
				state[name] = 2
				return nil
			}
			return fmt.Errorf("file %s is imported but missing (build the set with --include_imports)", name)
		}
		state[name] = 1
		for _, dep := range fd.GetDependency() {
			if err := build(dep); err != nil {
				return err
			}
		}
		f, err := protodesc.NewFile(fd, res)
		if err != nil {
			return fmt.Errorf("file %s: %w", name, err)
		}
		if err := files.RegisterFile(f); err != nil {
			return fmt.Errorf("file %s: %w", name, err)
		}
		state[name] = 2
		return nil
	}
	for _, fd := range fds {
		if err := build(fd.GetName()); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// resolver finds files built so far, then the program's own (the well-known types).
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

// unknownServiceError is a service the server's reflection does not know.
type unknownServiceError struct {
	service string
	known   []string
}

func (e *unknownServiceError) Error() string {
	return fmt.Sprintf("the server has no service %s (it has %s)", e.service, strings.Join(e.known, ", "))
}

// listServices asks the reflection service which services the server has.
func listServices(stream reflectionpb.ServerReflection_ServerReflectionInfoClient) ([]string, error) {
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		if !strings.HasPrefix(s.GetName(), "grpc.reflection.") {
			out = append(out, s.GetName())
		}
	}
	return out, nil
}
