package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ndbench/ndbench/driver"
)

// mode=direct: each engine worker runs its batches on a pgconn.PgConn taken from the
// driver's poolSize connections (directpool.go), with the read and the upsert prepared on
// it once. An operation is one Bind/Execute/Sync on that connection: no pgxpool to
// acquire from, no row scanning through pgx's type system, and no context watching,
// because pgconn is handed context.Background() (it then arms no watcher goroutine
// hand-off per call) and a timeout or hard stop reaches the connection through Interrupt
// as a past deadline on its net.Conn. A batch of several operations goes out in pgconn's
// pipeline mode, one Sync per operation, in one write. docs/design-notes.md has the
// measurements that led here.

// longAgo is a deadline in the past: setting it makes blocked I/O return at once.
var longAgo = time.Unix(1, 0)

// Statement names and parameter types of the prepared read and upsert.
const (
	readStmt  = "ndbench_read"
	writeStmt = "ndbench_write"
	oidText   = 25
	oidBytea  = 17
)

// binary asks for every parameter and result column in binary format: the key's binary
// form is its bytes, and a BYTEA value travels as is instead of hex text.
var binary = []int16{1}

// singleViaPipeline makes a batch of one use pipeline mode as larger batches do, instead
// of ExecStatement; the benchmarks that chose ExecStatement flip it.
var singleViaPipeline = false

// pipeline is one worker's side of mode=direct: the connection of the batch running,
// and buffers reused from batch to batch.
type pipeline struct {
	d *Driver
	// home holds the worker's connection between batches while no other worker waits
	// for one (directPool.keep); another worker may take it from there.
	home atomic.Pointer[dconn]
	// Run's goroutine only.
	c       *dconn // the batch's connection; nil between batches, or once handed off
	params  [2][]byte
	key     []byte // the key's bytes; pgconn copies parameters into its buffer
	val     []byte // a read's value, copied out of pgconn's buffer
	results []opResult
	order   []int // pipelineSync=batch: the batch's operations in key order

	// mu guards the batch running and its socket against Interrupt, which runs on the
	// engine's watchdog goroutine.
	mu          sync.Mutex
	ctx         context.Context // of the batch running; nil between batches
	nc          net.Conn        // the batch's socket
	interrupted bool            // a deadline was set on nc for the running batch
}

// Warm opens mode=direct's connections for workers workers ahead of the load, poolSize
// at most (driver.Warmer), as pgbench connects its clients before its clock starts: the
// workers otherwise connect on their first operations, and a run's first second or two
// measured 50 connects (each a backend forked, two statements prepared) beside the
// operations of the workers already connected. mode=pool opens its connections as
// pgxpool does, on demand.
func (d *Driver) Warm(ctx context.Context, workers int) error {
	if d.direct == nil {
		return nil
	}
	return d.direct.warm(ctx, workers)
}

// Pipelines reports whether the driver runs in mode=direct.
func (d *Driver) Pipelines() bool { return d.mode == "direct" }

// NewPipeline returns one worker's side of mode=direct; it takes a connection for each
// batch, so a server that is down shows as failed operations and the worker keeps trying.
func (d *Driver) NewPipeline(context.Context) (driver.Pipeline, error) {
	if !d.Pipelines() {
		return nil, fmt.Errorf("postgres: pipelines need mode=direct (mode is %s)", d.mode)
	}
	p := &pipeline{d: d, val: make([]byte, 0, 256)}
	d.direct.addHome(&p.home)
	return p, nil
}

// drop marks the batch's connection as broken: its stream can no longer be trusted (an
// I/O error, an interrupted pipelined batch). It is closed when the batch ends.
func (p *pipeline) drop() {
	if p.c != nil {
		p.c.broken = true
	}
}

// closeConn closes pc without waiting long for a server that does not answer.
func closeConn(pc *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = pc.Close(ctx)
}

// Interrupt makes blocked I/O return by setting a past deadline on the socket, but only
// when the batch running is really over (its ctx is done): an interrupt that arrives
// stale, after its batch ended, must not break the next batch, and pgconn closes a
// connection on any deadline error, so a stale deadline cannot be ridden out as the redis
// driver does.
func (p *pipeline) Interrupt() {
	p.mu.Lock()
	if p.ctx != nil && p.nc != nil && !p.interrupted && p.ctx.Err() != nil {
		_ = p.nc.SetDeadline(longAgo)
		p.interrupted = true
	}
	p.mu.Unlock()
}

// begin records the batch running and its connection, for Interrupt.
func (p *pipeline) begin(ctx context.Context, c *dconn) {
	p.c = c
	p.mu.Lock()
	p.ctx, p.nc = ctx, c.nc
	p.mu.Unlock()
}

// end forgets the batch and gives its connection back, unless exec handed it to be
// drained. A deadline Interrupt set after the batch had read its last reply is cleared:
// the stream is in step.
func (p *pipeline) end() {
	p.mu.Lock()
	p.ctx, p.nc = nil, nil
	interrupted := p.interrupted
	p.interrupted = false
	p.mu.Unlock()
	c := p.c
	p.c = nil
	if c == nil {
		return
	}
	if interrupted && !c.broken {
		c.broken = c.nc.SetDeadline(time.Time{}) != nil
	}
	p.d.direct.keep(&p.home, c)
}

// Run sends ops and completes each as its reply (up to its ReadyForQuery) is read.
func (p *pipeline) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	c := p.d.direct.unhome(&p.home)
	if c == nil {
		var err error
		if c, err = p.d.direct.get(ctx); err != nil {
			p.failAll(ctx, ops, 0, done, err)
			return
		}
	}
	p.begin(ctx, c)
	defer p.end()
	// Checked after begin: an Interrupt before it found no batch and did nothing, and it
	// came after ctx ended, so ctx.Err shows it here.
	if err := ctx.Err(); err != nil {
		p.failAll(ctx, ops, 0, done, fmt.Errorf("postgres: %d operations not sent: %w", len(ops), err))
		return
	}
	if len(ops) == 1 && !singleViaPipeline {
		p.exec(ctx, &ops[0], done)
		return
	}
	if p.d.opts.PipelineSync == "batch" {
		p.oneTransaction(ctx, ops, done)
		return
	}
	p.pipelined(ctx, ops, done)
}

// failAll completes ops[from:] with err.
func (p *pipeline) failAll(ctx context.Context, ops []driver.PipelineOp, from int, done func(int, []byte, error), err error) {
	err = p.opErr(ctx, err)
	for i := from; i < len(ops); i++ {
		done(i, nil, err)
	}
}

// opErr classifies err. A failure of the batch's I/O once its ctx ended or its deadline
// passed (a deadline on the socket, a connect cut short) is a timeout: the engine's
// watchdog may not have marked the ctx yet when a connect gives up at the deadline.
func (p *pipeline) opErr(ctx context.Context, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) && pastDeadline(ctx) {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		if !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		return driver.Wrap(driver.ClassTimeout, err)
	}
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	return driver.Wrap(Classify(err), err)
}

// pastDeadline reports whether ctx ended or its deadline passed; it reads the clock only
// when ctx has a deadline and has not ended, which is on the error path only.
func pastDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// statement returns the statement and parameters of op, or nil for an operation the
// driver does not have.
func (p *pipeline) statement(op *driver.PipelineOp) (*pgconn.StatementDescription, [][]byte, []int16) {
	p.key = append(p.key[:0], op.Key...)
	p.params[0] = p.key
	switch op.Op {
	case driver.PipelineRead:
		return p.c.read, p.params[:1], binary
	case driver.PipelineWrite:
		p.params[1] = op.Value
		return p.c.write, p.params[:2], nil
	}
	return nil, nil, nil
}

func opName(op int) string {
	if op == driver.PipelineRead {
		return "read"
	}
	return "write"
}

// unsupported is the error of an operation index the driver does not define (it defines
// none beyond read and write, so the engine never sends one).
func unsupported(op int) error {
	return driver.Wrap(driver.ClassRejected, fmt.Errorf("postgres: no operation %d", op))
}

// exec runs one operation: Bind, Execute and Sync written in one go on the socket
// (wire.go), then the replies read up to ReadyForQuery. It goes around ExecStatement,
// which arms and stops a timer per call (pgconn's guard against a write that blocks while
// the server waits for it to read), takes pgconn's lock, builds a ResultReader, and sends
// a Describe before every upsert (a statement without result columns has no cached
// description), and around pgproto3's Frontend (see wire). None of it is needed here:
// the connection is this worker's alone; the previous reply was read to its
// ReadyForQuery, so nothing is due from the server while the request is written and the
// write cannot wait on a server that waits for us to read (the deadlock the timer
// guards against), whatever the value's size; and the statements were prepared with
// their descriptions.
func (p *pipeline) exec(ctx context.Context, op *driver.PipelineOp, done func(int, []byte, error)) {
	c := p.c
	if op.Op != driver.PipelineRead && op.Op != driver.PipelineWrite {
		done(0, nil, unsupported(op.Op))
		return
	}
	if !c.synced {
		// A pipelined batch ran on pgconn: its background reader may still hold a read.
		if err := c.pc.SyncConn(ctx); err != nil {
			p.ioFailed(ctx, op, done, err)
			return
		}
		c.synced = true
	}
	if op.Op == driver.PipelineRead {
		c.wire.request(c.read.Name, op.Key, nil, false)
	} else {
		c.wire.request(c.write.Name, op.Key, op.Value, true)
	}
	if err := c.wire.send(); err != nil {
		p.ioFailed(ctx, op, done, err)
		return
	}
	val, found, pgErr, err := c.wire.reply(p.val)
	p.val = val
	if err != nil && isTimeout(err) && pastDeadline(ctx) {
		// Cut at the deadline while the reply was due: the operation is over, the
		// connection is not. It is handed to be drained (the query cancelled, the reply
		// read to its end) and given back in step with the server.
		p.c = nil
		p.d.direct.drain(c)
		done(0, nil, p.opErr(ctx, fmt.Errorf("postgres %s: %w", opName(op.Op), err)))
		return
	}
	switch {
	case err != nil:
		p.ioFailed(ctx, op, done, err)
	case pgErr != nil:
		// The server skipped to the Sync: its ReadyForQuery came, and the connection
		// stays usable.
		done(0, nil, p.d.fail(opName(op.Op), pgErr))
	case op.Op == driver.PipelineWrite:
		done(0, nil, nil)
	case !found:
		done(0, nil, driver.ErrNotFound)
	default:
		done(0, p.val, nil)
	}
}

// toPgconn hands the batch's connection from wire to pgconn for a pipelined batch. Bytes
// wire read past the last ReadyForQuery (the server sends none unasked, so this is a
// stream out of step) would be lost to pgconn: the connection is dropped instead.
func (p *pipeline) toPgconn() error {
	if p.c.wire.buffered() {
		p.drop()
		return errors.New("postgres: the connection holds a reply no request asked for")
	}
	p.c.synced = false
	return nil
}

// ioFailed completes the operation of a single-operation batch whose connection failed
// under it (an I/O error, a request cut at its deadline while being written): the stream
// is no longer in step with the server, so the connection is closed when given back.
func (p *pipeline) ioFailed(ctx context.Context, op *driver.PipelineOp, done func(int, []byte, error), err error) {
	p.drop()
	done(0, nil, p.opErr(ctx, fmt.Errorf("postgres %s: %w", opName(op.Op), err)))
}

// pipelined sends every operation of the batch, each followed by its own Sync, in one
// write, then reads the replies in order. A Sync per operation keeps the operations
// independent, as if sent one by one: each is its own transaction, committed before its
// done, and a failed one does not roll back or skip the others (one Sync for the batch
// would make it one transaction).
func (p *pipeline) pipelined(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	if err := p.toPgconn(); err != nil {
		p.failAll(ctx, ops, 0, done, err)
		return
	}
	pl := p.c.pc.StartPipeline(context.Background())
	for i := range ops {
		sd, params, results := p.statement(&ops[i])
		if sd == nil {
			continue // completed as unsupported when its turn comes
		}
		pl.SendQueryStatement(sd, params, binary, results)
		pl.SendPipelineSync()
	}
	if err := pl.Flush(); err != nil {
		p.drop()
		p.failAll(ctx, ops, 0, done, fmt.Errorf("postgres: send %d operations: %w", len(ops), err))
		return
	}
	for i := range ops {
		op := &ops[i]
		if op.Op != driver.PipelineRead && op.Op != driver.PipelineWrite {
			done(i, nil, unsupported(op.Op))
			continue
		}
		found := false
		res, err := pl.GetResults()
		if err == nil {
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				err = fmt.Errorf("pipeline: result %T where a statement's was due", res)
			} else {
				if rr.NextRow() {
					if vs := rr.Values(); len(vs) == 1 {
						p.val, found = append(p.val[:0], vs[0]...), true
					}
				}
				_, err = rr.Close()
			}
		}
		var pe *pgconn.PgError
		if err != nil && !errors.As(err, &pe) {
			// The stream is broken (I/O error, interrupt): pgconn closed the connection.
			p.drop()
			p.failAll(ctx, ops, i, done, fmt.Errorf("postgres %s: %w", opName(op.Op), err))
			return
		}
		// The operation's Sync: its ReadyForQuery says its transaction is over. A
		// server error on commit arrives here instead.
		if _, serr := pl.GetResults(); serr != nil {
			if !errors.As(serr, &pe) {
				p.drop()
				p.failAll(ctx, ops, i, done, fmt.Errorf("postgres %s: %w", opName(op.Op), serr))
				return
			}
			if err == nil {
				err = serr
			}
		}
		switch {
		case err != nil:
			done(i, nil, p.d.fail(opName(op.Op), err))
		case op.Op == driver.PipelineWrite:
			done(i, nil, nil)
		case !found:
			done(i, nil, driver.ErrNotFound)
		default:
			done(i, p.val, nil)
		}
	}
	p.closePipeline(pl)
}

// closePipeline returns the connection to normal mode, or drops it if that fails.
func (p *pipeline) closePipeline(pl *pgconn.Pipeline) {
	if err := pl.Close(); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || p.c.pc.IsClosed() {
			p.drop()
		}
	}
}

// opResult is a reply held until its batch's transaction ends (pipelineSync=batch).
type opResult struct {
	val   []byte
	found bool
}

// oneTransaction sends a batch with one Sync (pipelineSync=batch) through pgconn's
// ExecBatch, as pgbench's \startpipeline blocks are sent: the batch is one implicit
// transaction, so a write is only done once its ReadyForQuery arrived, and a failed
// operation rolls back the writes before it and makes the server skip those after it.
// The replies arrive together (the server flushes at the Sync), so holding them back
// until then costs no latency worth the name. Reads before a failure keep their values:
// they were answered. ExecBatch rather than the pipeline API: it keeps no per-request
// queue entries, which cost the pipeline API a dozen allocations per operation.
//
// The statements go out in key order (stable, so operations on one key keep theirs): a
// transaction takes row locks as it writes, and two workers' batches that upsert the same
// keys in different orders deadlock (the server then aborts one, SQLSTATE 40P01). One
// order for everyone is the classic cure; within one transaction the order of distinct
// keys changes nothing else.
func (p *pipeline) oneTransaction(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	if cap(p.results) < len(ops) {
		p.results = append(p.results[:cap(p.results)], make([]opResult, len(ops)-cap(p.results))...)
	}
	res := p.results[:len(ops)] // by position in order
	if err := p.toPgconn(); err != nil {
		p.failAll(ctx, ops, 0, done, err)
		return
	}
	order := p.order[:0]
	for i := range ops {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(ops[a].Key, ops[b].Key) })
	p.order = order
	var b pgconn.Batch
	for _, i := range order {
		sd, params, results := p.statement(&ops[i])
		if sd == nil {
			// Nothing was sent: the engine never asks for an operation the driver lacks.
			for j := range ops {
				done(j, nil, unsupported(ops[i].Op))
			}
			return
		}
		b.ExecStatement(sd, params, binary, results)
	}
	mrr := p.c.pc.ExecBatch(context.Background(), &b)
	n := 0 // replies read
	for n < len(ops) && mrr.NextResult() {
		rr := mrr.ResultReader()
		found := false
		if rr.NextRow() {
			if vs := rr.Values(); len(vs) == 1 {
				res[n].val, found = append(res[n].val[:0], vs[0]...), true
			}
		}
		if _, err := rr.Close(); err != nil {
			break
		}
		res[n].found = found
		n++
	}
	batchErr := mrr.Close()
	failedAt := len(ops)
	var pe *pgconn.PgError
	broken := false // the stream broke: nothing after the replies read is known
	switch {
	case batchErr != nil:
		failedAt, broken = n, !errors.As(batchErr, &pe)
	case n < len(ops):
		failedAt, broken = n, true
		batchErr = fmt.Errorf("%d replies to %d statements", n, len(ops))
	}
	if broken || p.c.pc.IsClosed() {
		p.drop()
	}
	var cause error
	if batchErr != nil {
		if broken {
			cause = p.opErr(ctx, fmt.Errorf("postgres pipeline of %d: %w", len(ops), batchErr))
		} else {
			cause = p.d.fail(fmt.Sprintf("postgres pipeline of %d", len(ops)), batchErr)
		}
	}
	for pos, i := range order {
		op := &ops[i]
		switch {
		case cause == nil || (pos < failedAt && op.Op == driver.PipelineRead):
			switch {
			case op.Op == driver.PipelineWrite:
				done(i, nil, nil)
			case !res[pos].found:
				done(i, nil, driver.ErrNotFound)
			default:
				done(i, res[pos].val, nil)
			}
		case pos == failedAt:
			done(i, nil, cause)
		case pos < failedAt:
			done(i, nil, driver.Wrap(driver.Classify(cause), fmt.Errorf("postgres write rolled back with its batch: %w", cause)))
		default:
			done(i, nil, driver.Wrap(driver.Classify(cause), fmt.Errorf("postgres %s skipped after operation %d of its batch failed: %w", opName(op.Op), order[failedAt], cause)))
		}
	}
}

// Close gives back the connection the worker kept between batches.
func (p *pipeline) Close() error {
	p.d.direct.removeHome(&p.home)
	return nil
}
