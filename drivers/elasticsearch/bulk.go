package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// indexer is the bulk indexer of bulkWrite: workers' writes queue up, bulkConcurrency
// senders each take up to bulkSize of them (waiting at most bulkFlushInterval for a batch
// to fill) into one _bulk request, and hand each writer its own document's result. A
// write is thus counted by its own document's outcome, with its own latency (the wait
// for the batch included, as a client of a bulk indexer sees it).
type indexer struct {
	d        *Driver
	size     int
	interval time.Duration
	queue    chan *bulkItem
	done     chan struct{}
}

// bulkItem is one queued write.
type bulkItem struct {
	ctx   context.Context // the write's: a write whose caller gave up is not sent
	index string
	key   string
	doc   []byte
	res   chan error // buffered: a sender never blocks on a writer that left
}

func newIndexer(d *Driver, size int, interval time.Duration, senders int) *indexer {
	x := &indexer{d: d, size: size, interval: interval, queue: make(chan *bulkItem, size*senders), done: make(chan struct{})}
	for range senders {
		d.wg.Add(1)
		go x.send()
	}
	return x
}

var errIndexerClosed = driver.Wrap(driver.ClassUnavailable, errors.New("elasticsearch: bulk indexer closed"))

// write queues the document and waits for its result or the end of ctx. A document
// already in a request when ctx ends may still be indexed: the store decides, as with
// any request whose answer nobody waits for.
func (x *indexer) write(ctx context.Context, index, key string, doc []byte) error {
	it := &bulkItem{ctx: ctx, index: index, key: key, doc: doc, res: make(chan error, 1)}
	select {
	case x.queue <- it:
	case <-ctx.Done():
		return fmt.Errorf("queue for bulk: %w", ctx.Err())
	case <-x.done:
		return errIndexerClosed
	}
	select {
	case err := <-it.res:
		return err
	case <-ctx.Done():
		return fmt.Errorf("wait for bulk result: %w", ctx.Err())
	case <-x.done:
		return errIndexerClosed
	}
}

func (x *indexer) close() { close(x.done) }

// send is one sender: it collects a batch and sends it, until the driver closes.
func (x *indexer) send() {
	defer x.d.wg.Done()
	batch := make([]*bulkItem, 0, x.size)
	var body []byte
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch = batch[:0]
		select {
		case it := <-x.queue:
			batch = append(batch, it)
		case <-x.done:
			return
		}
		if x.interval > 0 {
			timer.Reset(x.interval)
		}
	fill:
		for len(batch) < x.size {
			if x.interval <= 0 {
				select {
				case it := <-x.queue:
					batch = append(batch, it)
					continue
				default:
					break fill
				}
			}
			select {
			case it := <-x.queue:
				batch = append(batch, it)
			case <-timer.C:
				break fill
			case <-x.done:
				timer.Stop()
				return
			}
		}
		timer.Stop()
		// Writers that gave up (timeout, stop) are not sent.
		live := batch[:0]
		for _, it := range batch {
			if it.ctx.Err() != nil {
				it.res <- it.ctx.Err()
				continue
			}
			live = append(live, it)
		}
		if len(live) == 0 {
			continue
		}
		// A buffer of its own per request: net/http may still be sending the last body
		// after its answer came back (a server refusing a request from its headers,
		// 413 over http.max_content_length, answers before it read the body), and
		// reads it until it closes the body on its own goroutine. The capacity carries
		// over, so the buffer is allocated once per request at its final size.
		body = make([]byte, 0, cap(body))
		for _, it := range live {
			body = appendAction(body, it.index, it.key)
			body = append(body, it.doc...)
			body = append(body, '\n')
		}
		// The request outlives any one writer (it carries several): it ends with the
		// driver, or by the request timeout.
		errs, err := x.d.sendBulk(x.d.life, body, len(live))
		for i, it := range live {
			if err != nil {
				it.res <- err
			} else {
				it.res <- errs[i]
			}
		}
	}
}
