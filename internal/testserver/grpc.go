package testserver

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
)

// KVGRPCPackage is the import path of the key-value gRPC service KVGRPC builds and runs.
const KVGRPCPackage = "github.com/ndbench/ndbench/internal/testserver/kvgrpcd"

// KVGRPC builds cmd kvgrpcd (internal/testserver/kvgrpcd, a small key-value gRPC service
// described at run time, with server reflection) into the server's directory and runs it
// on loopback. Its FileDescriptorSet is written to KVGRPCDescriptors(s), for clients
// that do not use reflection.
func KVGRPC(ctx context.Context) (*Server, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("start kvgrpc: the go command is needed to build %s: %w", KVGRPCPackage, err)
	}
	bin := func(s *Server) string { return filepath.Join(s.Dir, "kvgrpcd") }
	return start(ctx, "kvgrpc", spec{
		prepare: func(ctx context.Context, s *Server) error {
			cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin(s), KVGRPCPackage)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %s: %w: %s", KVGRPCPackage, err, tailLines(out, 20))
			}
			return nil
		},
		command: func(s *Server) (*exec.Cmd, error) {
			return exec.Command(bin(s), "-addr", s.Addr(), "-descriptors", KVGRPCDescriptors(s)), nil
		},
		ready: func(ctx context.Context, addr string) error {
			c, err := dialProbe(ctx, addr)
			if err != nil {
				return err
			}
			return c.Close()
		},
		readyTimeout: defaultReadyTimeout,
		stopSignal:   syscall.SIGTERM,
		stopTimeout:  defaultStopTimeout,
	})
}

// KVGRPCDescriptors is where a KVGRPC server wrote its FileDescriptorSet.
func KVGRPCDescriptors(s *Server) string { return filepath.Join(s.Dir, "kv.binpb") }
