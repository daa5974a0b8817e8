//go:build !linux

package testserver

import "fmt"

// Pause freezes the server's processes; it needs Linux's /proc to find them.
func (s *Server) Pause() (resume func(), err error) {
	return nil, fmt.Errorf("pause %s: only supported on Linux", s.Name)
}
