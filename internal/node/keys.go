package node

import (
	"context"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// Read reads one key through the driver, for debugging, bounded by the op timeout.
func (i *Node) Read(ctx context.Context, key string) ([]byte, error) {
	d, timeout, err := i.driverForOp()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return d.Read(ctx, key)
}

// Write writes one key through the driver, for debugging, bounded by the op timeout.
func (i *Node) Write(ctx context.Context, key string, value []byte) error {
	d, timeout, err := i.driverForOp()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return d.Write(ctx, key, value)
}

func (i *Node) driverForOp() (driver.Driver, time.Duration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.drv == nil {
		return nil, 0, ErrNotInitialized
	}
	return i.drv, i.store.Current().Config.Workload.OpTimeout, nil
}
