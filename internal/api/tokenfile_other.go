//go:build !unix

package api

import "os"

// osReloadSignal: Windows has no SIGHUP; the token file is still watched for changes.
func osReloadSignal() (<-chan os.Signal, func()) { return nil, func() {} }
