//go:build !unix

package api

import "os"

// reloadSignal: Windows has no SIGHUP; the token file is still watched for changes.
func reloadSignal() (<-chan os.Signal, func()) { return nil, func() {} }
