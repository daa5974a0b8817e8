//go:build !unix

package cli

// fileLimit reports no limit: Windows has no per-process file-descriptor limit of the
// kind RLIMIT_NOFILE sets (sockets are handles, bounded by memory).
func fileLimit() (soft, hard uint64, ok bool) { return 0, 0, false }
