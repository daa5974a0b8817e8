//go:build !linux

package testserver

import (
	"errors"
	"syscall"
)

// errPlatform fails every start here. The harness kills a server's whole process group,
// finds helpers that left the group through /proc and relies on Pdeathsig so a crashed test
// never leaves a server running; without those a test run could leak servers holding ports
// and data directories, so it refuses rather than half-works. The integration tests, like
// the servers scripts/install-test-deps.sh installs, run on Linux.
var errPlatform = errors.New("testserver: starting real servers needs Linux (process groups, Pdeathsig, /proc); run the integration tests on Linux")

// sysProcAttr is never used to start anything here (see errPlatform).
func sysProcAttr(*account, bool) *syscall.SysProcAttr { return nil }

// signalPID is never reached here (see errPlatform).
func signalPID(int, syscall.Signal) error { return errPlatform }

// killGroup is never reached here (see errPlatform).
func killGroup(int) error { return errPlatform }

// procs finds no processes here: there is no /proc to read.
func procs() []procStat { return nil }
