// Package scenariofuzz holds the fuzz target of scenario.Parse and nothing else. It lives
// apart from package scenario because a fuzz build instruments every package the test
// binary links, and scenario's own tests link every driver (drivers/all: 1,670 packages,
// more than 15 minutes to build instrumented on a busy 2-core machine); this one links
// the memory driver alone (394).
package scenariofuzz
