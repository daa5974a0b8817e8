package script

import (
	"encoding/json"
	"time"

	"github.com/dop251/goja"

	"github.com/ndbench/ndbench/driver"
)

// Options configure the script driver.
type Options struct {
	File     string        `opt:"file" default:"" help:"JavaScript file defining init(config), read(key), write(key, value) and the named operations; reloaded when it changes (see watch)"`
	Source   string        `opt:"source" default:"" help:"the script itself, instead of file (never reloaded)"`
	Config   string        `opt:"config" default:"{}" live:"true" help:"JSON value passed to the script's init(config); a change reloads the script"`
	Runtimes int           `opt:"runtimes" default:"0" min:"0" max:"65536" help:"JavaScript runtimes at most, one per concurrent operation (operations beyond wait); 0 = one per concurrent operation, created as needed"`
	Watch    time.Duration `opt:"watch" default:"1s" min:"0s" help:"how often the file is read for changes (content hash); 0 = never reload"`
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

// noScript is Init's error for options naming no script.
func noScript() error {
	return driver.FieldErrors{&driver.FieldError{Field: "file", Allowed: "the path of a JavaScript file (or the script itself in source)"}}
}
