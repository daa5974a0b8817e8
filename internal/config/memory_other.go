//go:build !linux && !darwin

package config

// physicalMemory cannot read the machine's memory here; memoryCeiling falls back to
// fallbackMemory.
func physicalMemory() (int64, string) { return 0, "" }
