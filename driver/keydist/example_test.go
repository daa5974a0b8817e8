package keydist_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/ndbench/ndbench/driver/keydist"
	_ "github.com/ndbench/ndbench/drivers/memory" // the store of the run below
	"github.com/ndbench/ndbench/internal/cli"
)

// stridedOptions are the pattern's options, declared as a driver's are: the tags give
// each its name, default, bounds and help, and ndbench turns them into the listing, the
// validation and the errors.
type stridedOptions struct {
	Stride int64 `opt:"stride" default:"10" min:"1" max:"1000000" help:"distance between the keys used"`
}

// picks counts the keys the pattern picked, to show below that the run used it. (A real
// distribution keeps no such counter: one shared atomic is a contended cache line on a
// busy node.)
var picks atomic.Int64

// A distribution registers from an init function, like a driver: importing its package
// into the binary (beside drivers/all) is all ndbench needs to offer it.
func init() {
	keydist.MustRegister(keydist.Definition{
		Name:       "strided",
		Summary:    "uniform over every stride-th key",
		NewOptions: func() any { return new(stridedOptions) },
		New: func(ks keydist.Keyspace, opts any) (keydist.Generator, error) {
			stride := opts.(*stridedOptions).Stride
			used := (ks.NumKeys + stride - 1) / stride // keys 0, stride, 2*stride, ... below NumKeys
			// Everything Next needs is computed here, once: Next itself allocates nothing.
			return keydist.GeneratorFunc(func(r *rand.Rand, _ keydist.Op) int64 {
				picks.Add(1)
				return r.Int64N(used) * stride
			}), nil
		},
	})
}

// ExampleRegister registers a key distribution (in init, above), then finds it in
// `ndbench workloads`, runs a load with it on the memory store, and gives it a bad option.
func ExampleRegister() {
	dir, err := os.MkdirTemp("", "keydist-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	out, _ := ndbench(dir, "workloads")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "strided") || strings.Contains(line, "stride=") {
			fmt.Println(strings.Join(strings.Fields(line), " "))
		}
	}

	rep := filepath.Join(dir, "report.json")
	_, code := ndbench(dir, "run", "--driver", "memory", "--duration", "300ms", "--report", rep,
		"--set", "workload.pattern=strided", "--set", "workload.patternOptions=stride=100",
		"--set", "workload.readRate=1000", "--set", "workload.writeRate=1000")
	fmt.Println("run exit code:", code)
	fmt.Println("the run picked its keys with strided:", picks.Load() > 0)
	var r struct {
		Config []struct{ Key, Value string }
	}
	if b, err := os.ReadFile(rep); err == nil && json.Unmarshal(b, &r) == nil {
		for _, e := range r.Config {
			if strings.HasPrefix(e.Key, "workload.pattern") {
				fmt.Printf("report: %s=%s\n", e.Key, e.Value)
			}
		}
	}

	out, code = ndbench(dir, "config", "--driver", "memory",
		"--set", "workload.pattern=strided", "--set", "workload.patternOptions=stride=0")
	fmt.Println("exit code:", code)
	fmt.Print(out)
	// Output:
	// strided uniform over every stride-th key
	// options workload.patternOptions=stride=10 [1..1000000]
	// run exit code: 0
	// the run picked its keys with strided: true
	// report: workload.pattern=strided
	// report: workload.patternOptions=stride=100
	// exit code: 2
	// error: workload.patternOptions: invalid value "stride=0" (from --set); allowed: stride: an integer from 1 to 1000000
}

// ndbench runs the command line as the binary would, with its standard output and error
// going to a file whose text it returns (the example prints only what it picks from it).
func ndbench(dir string, args ...string) (string, int) {
	f, err := os.CreateTemp(dir, "out")
	if err != nil {
		return err.Error(), -1
	}
	defer f.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = f, f
	code := cli.Main(args)
	os.Stdout, os.Stderr = stdout, stderr
	if _, err := f.Seek(0, 0); err != nil {
		return err.Error(), code
	}
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String(), code
}
