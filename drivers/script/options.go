package script

import (
	"encoding/json"
	"time"

	"github.com/dop251/goja"

	"github.com/ndbench/ndbench/driver"
)

// Options configure the script driver.
type Options struct {
	File     string        `opt:"file" default:"" reach:"script,path" help:"JavaScript file defining init(config), read(key), write(key, value) and the named operations; reloaded when it changes (see watch)"`
	Source   string        `opt:"source" default:"" reach:"script" help:"the script itself, instead of file (never reloaded)"`
	Config   string        `opt:"config" default:"{}" live:"true" help:"JSON value passed to the script's init(config); a change reloads the script"`
	Runtimes int           `opt:"runtimes" default:"0" min:"0" max:"65536" help:"JavaScript runtimes at most, one per concurrent operation (operations beyond wait); 0 = one per concurrent operation, created as needed"`
	Watch    time.Duration `opt:"watch" default:"1s" min:"0s" max:"24h" help:"how often the file is read for changes (content hash); 0 = never reload"`

	// The limits below bound what a script can take from the node that runs it: goja
	// runs in process, so a runaway script would otherwise stall a worker for ever or
	// take the whole process down with it.
	InitTimeout time.Duration `opt:"initTimeout" default:"30s" min:"10ms" max:"10m" help:"most time loading the script in one runtime may take: running it and its init(config), stores it opens included; past it the load fails as a timeout"`
	CallTimeout time.Duration `opt:"callTimeout" default:"30s" min:"1ms" max:"10m" help:"most wall-clock time one call of a script function may run, whatever the operation's deadline (the earlier applies); past it the JavaScript is interrupted and the operation fails as a timeout"`
	MemoryLimit driver.Size   `opt:"memoryLimit" default:"512MiB" min:"8MiB" max:"1TiB" help:"most the Go heap may grow, above its size at load, while scripts run; past it every runtime is stopped and dropped and the calls in flight fail (class rejected); counted in workload.memoryBudget beside the workload's estimate"`
}

// Validate checks what the tags cannot: not both file and source, source compiles, and
// config is JSON. Neither file nor source is the defaults' state, which registration
// validates, so Init reports that one (noScript).
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if o.File != "" && o.Source != "" {
		errs = append(errs, &driver.FieldError{Field: "source", Value: "(set)", Allowed: "empty when file is set: one script, from one place"})
	}
	if o.Source != "" {
		// Compiling touches nothing outside the process, so an inline script's syntax
		// errors are found when the configuration is written, not at Init.
		if _, err := goja.Compile("source", o.Source, false); err != nil {
			errs = append(errs, &driver.FieldError{Field: "source", Value: "(script)", Allowed: "JavaScript that compiles: " + err.Error()})
		}
	}
	if !json.Valid([]byte(o.Config)) {
		errs = append(errs, &driver.FieldError{Field: "config", Value: driver.Shown(false, o.Config), Allowed: `a JSON value, e.g. {"ttl": 60}`})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// MemoryClaim is what the scripts may take of the node's memory, and the option that says
// so: the configuration counts it against workload.memoryBudget beside the workload's
// own estimate, so a limit the machine cannot hold is refused when it is written rather
// than found by the kernel's out-of-memory killer.
func (o *Options) MemoryClaim() (int64, string) { return int64(o.MemoryLimit), "memoryLimit" }

// noScript is Init's error for options naming no script.
func noScript() error {
	return driver.FieldErrors{&driver.FieldError{Field: "file", Allowed: "the path of a JavaScript file (or the script itself in source)"}}
}
