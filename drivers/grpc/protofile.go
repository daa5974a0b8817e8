package grpc

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// fromProtoFiles compiles .proto source files (paths separated by commas) with
// protocompile, looking imports up in importPaths (comma-separated directories; empty
// means the directory of each file) and in the standard imports (google/protobuf/*).
func fromProtoFiles(ctx context.Context, paths, importPaths string) (*protoregistry.Files, error) {
	var dirs, names []string
	for _, d := range strings.Split(importPaths, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, p := range strings.Split(paths, ",") {
		p = strings.TrimSpace(p)
		if len(dirs) == 0 || importPaths == "" {
			dirs = appendUnique(dirs, filepath.Dir(p))
		}
		names = append(names, p)
	}
	// Files are named relative to an import path, as protoc names them.
	for i, p := range names {
		for _, d := range dirs {
			if rel, err := filepath.Rel(d, p); err == nil && !strings.HasPrefix(rel, "..") {
				names[i] = filepath.ToSlash(rel)
				break
			}
		}
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: dirs})}
	compiled, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", paths, err)
	}
	seen := map[string]bool{}
	var fds []*descriptorpb.FileDescriptorProto
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		fds = append(fds, protodesc.ToFileDescriptorProto(f))
	}
	for _, f := range compiled {
		add(f)
	}
	return buildFiles(fds)
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
