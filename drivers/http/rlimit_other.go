//go:build !unix

package http

// openFilesInfo is empty where the process has no file-descriptor limit to report.
func openFilesInfo() string { return "" }
