//go:build unix

package api

import (
	"os"
	"os/signal"
	"syscall"
)

// osReloadSignal delivers SIGHUP, the Unix way to ask a daemon to re-read its files.
func osReloadSignal() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return c, func() { signal.Stop(c) }
}
