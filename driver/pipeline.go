package driver

import "context"

// Indexes of the base contract's operations in PipelineOp.Op; any other value is the index
// of an operation in Definition.Operations, as for Operator.Do.
const (
	PipelineRead  = -1 // Driver.Read
	PipelineWrite = -2 // Driver.Write
)

// Pipeliner is implemented by drivers that can give one worker a connection of its own and
// keep several operations in flight on it, the way redis-benchmark -P, memtier --pipeline
// and latte drive a store. The engine then never hands an operation to another goroutine:
// the worker writes every operation that is due in one batch and reads the replies in
// order, so a batch of n costs about one write and one read system call instead of n, and
// no pool, lock or goroutine hand-off sits between the operation and its connection.
//
// The engine asks for one Pipeline per worker and uses it from that worker only; a driver
// that implements Pipeliner still serves Read, Write and Do (backfill and the API use them).
type Pipeliner interface {
	// Pipelines reports whether the driver, as Init configured it, gives pipelines (a
	// driver with several client modes may give them in one mode only). The engine asks
	// once, after Init.
	Pipelines() bool
	// NewPipeline returns a pipeline for one worker. It may connect lazily: a store that is
	// down is reported through the operations' errors, and Run must retry the connection,
	// so an outage never ends a worker.
	NewPipeline(ctx context.Context) (Pipeline, error)
}

// PipelineOp is one operation of a batch.
type PipelineOp struct {
	// Op is PipelineRead, PipelineWrite or the index of an operation in
	// Definition.Operations.
	Op int
	// Key is the operation's key; like Read's, the driver may keep it.
	Key string
	// Value is the generated value of a write; the driver must not keep it after Run
	// returns.
	Value []byte
}

// Pipeline is one worker's connection to the store.
type Pipeline interface {
	// Run sends ops, in as few writes as it can, and calls done exactly once per operation
	// as soon as that operation's reply is read, in the order the replies arrive (a
	// protocol with stream ids, like CQL's, may answer out of order): the engine takes each
	// operation's end time in done, so a driver must not hold replies back until the whole
	// batch is read. value is what a read returned (nil otherwise), valid only until done
	// returns, so a driver can hand out its read buffer without a copy; err follows the
	// same rules as Read and Write (ErrNotFound for a miss, classified failures). An
	// operation Run returns without completing counts as failed.
	//
	// ctx carries the batch's deadline. Run need not watch ctx itself: when ctx ends the
	// engine calls Interrupt from another goroutine.
	Run(ctx context.Context, ops []PipelineOp, done func(i int, value []byte, err error))
	// Interrupt makes a Run blocked in I/O return promptly, typically by setting a past
	// deadline on the connection. It may be called from any goroutine at any time, also
	// between runs and more than once, so a driver must tell a stale interrupt (its ctx is
	// not done) from a real one and carry on after the stale one.
	Interrupt()
	// Close releases the pipeline's connection. It is called once, after the last Run.
	Close() error
}
