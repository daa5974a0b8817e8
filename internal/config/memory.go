package config

import (
	"fmt"
	"sync"

	"github.com/ndbench/ndbench/driver"
)

// fallbackMemory is what memoryCeiling assumes where the machine's memory cannot be read
// (an OS without a reader below, a sandbox that hides /proc): a node of a common size,
// so a budget a typo made huge is still refused.
const fallbackMemory = 16 << 30

// defaultMemoryBudget is workload.memoryBudget's default, the least the ceiling can be:
// the default must be valid on every machine.
const defaultMemoryBudget = 1 << 30

// memoryCeiling returns the largest workload.memoryBudget this machine can honour: three
// quarters of its memory (or of the memory its container may use, when less), leaving a
// quarter for the store client, the statistics and the runtime, and never less than the
// default budget. A budget beyond the machine's memory would let a workload the estimate
// approves be killed for want of memory, which the budget exists to prevent. source says
// where the figure came from, for the error.
var memoryCeiling = sync.OnceValues(func() (int64, string) {
	total, source := physicalMemory()
	if total <= 0 {
		total, source = fallbackMemory, "assumed: this system's memory could not be read"
	}
	// Rounded down to whole MiB, so the error states sizes in MiB rather than in bytes.
	return max(total/4*3&^(1<<20-1), defaultMemoryBudget), fmt.Sprintf("%s (%s)", driver.Size(total&^(1<<20-1)), source)
})
