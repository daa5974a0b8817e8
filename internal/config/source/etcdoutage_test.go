package source

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
)

// TestEtcdOutageShowsInStatus: while etcd is down, the client's watch reconnects by
// itself and says nothing, so a node kept its configuration while its source looked
// healthy. The source's status says it is failing, with the error (naming the endpoint)
// and since when; the last good configuration stays. Once etcd is back, a change made
// there is applied and the failure clears.
func TestEtcdOutageShowsInStatus(t *testing.T) {
	srv := etcdtest.New(t)
	f := newEtcdFixture(t, srv.Endpoint, srv.Client(), "/ndbench/outage/")
	f.put("workload.readRate", "7")
	src, err := OpenEtcd(context.Background(), f.store, EtcdOptions{
		Endpoints: []string{srv.Endpoint}, Prefix: f.prefix, OnError: f.errs.add, Timeout: time.Second})
	if err != nil {
		t.Fatalf("OpenEtcd: %v", err)
	}
	f.run(src)
	if st := src.Status(); st.Failing || !st.FailingSince.IsZero() {
		t.Fatalf("a healthy source's status: %+v", st)
	}

	down := time.Now()
	srv.Stop()
	waitFor(t, "the source to say it is failing", func() bool { return src.Status().Failing })
	st := src.Status()
	if st.Error == "" || !strings.Contains(st.Error, srv.Endpoint) {
		t.Errorf("failing with error %q; want it to name etcd %s", st.Error, srv.Endpoint)
	}
	if st.FailingSince.Before(down) || st.FailingSince.After(time.Now()) {
		t.Errorf("failing since %v; etcd stopped at %v", st.FailingSince, down)
	}
	if len(f.errs.all()) == 0 {
		t.Error("the outage was not reported to OnError")
	}
	f.want("workload.readRate", "7", "etcd "+f.prefix+"workload.readRate") // the last good one stays

	srv.Restart()
	rev := f.put("workload.readRate", "9")
	f.waitRevision(src, rev)
	waitFor(t, "the failure to clear", func() bool { return !src.Status().Failing })
	if st := src.Status(); !st.FailingSince.IsZero() {
		t.Errorf("recovered, but failing since %v", st.FailingSince)
	}
	f.want("workload.readRate", "9", "etcd "+f.prefix+"workload.readRate")
}
