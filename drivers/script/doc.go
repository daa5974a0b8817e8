// Package script is the ndbench driver whose operations are written in JavaScript (run by
// goja, in process): a script composes bundled drivers, HTTP calls and helpers into the
// operation a benchmark needs, such as a cache in front of a database, without a Go driver.
//
// # The script
//
// The script (file, or source inline) defines functions by name; each one it defines is an
// operation:
//
//	init(config)         once per runtime, before any operation; config is the config option, parsed as JSON
//	read(key)            returns the value (ArrayBuffer, Uint8Array or string), or null for a miss
//	write(key, value)    value is an ArrayBuffer, valid during the call only (copy it with value.slice(0) to keep it)
//	workflow(key)        a multi-step operation: NDBench's runWorkFlow, op name workflow
//	read1, read2         more read operations (key; value or null)
//	write1, write2       more write operations (key, value)
//	other1, other2       operations that get the key only
//	close()              once, when the script is unloaded
//
// Operations are plain synchronous functions (an async function's promise is not
// awaited: the operation ends when its function returns). Byte values are ArrayBuffers;
// new Uint8Array(value) reads them.
//
// Operation names are fixed slots because configurations are checked against the
// registry before any script is loaded; op classes mix them by name like any driver's
// (workload.readMix=read:9,read1:1). A slot the script does not define fails with class
// rejected. file is read relative to the working directory of ndbench, not to a config
// file that names it. Credentials passed in config are masked wherever the option is
// shown when they sit in password-like JSON members ("password", "token", "apiKey"...).
//
// # What a script can call
//
//	stores.open(name, {option: value})  a bundled driver by name (memory, redis, cassandra, ...), opened
//	                                    once per load and shared by all runtimes; its handle has
//	                                    read(key) (ArrayBuffer or null), write(key, value),
//	                                    op(name, key, value) and workflow(key)
//	http.request(method, url, body, headers), http.get(url, headers), http.post(url, body, headers)
//	                                    the answer as {status, headers, body, text}
//	sleep(ms), now() (ms since the epoch), randomInt(n), randomBytes(n), text(bytes), bytes(string)
//	fail(class, message)                throws new NdbenchError(class, message)
//	console.log, info, warn, error      to ndbench's log, with the script's name
//
// Values a script gets are its own: a store's read returns a copy, and what an operation
// returns is copied out, so a script may keep or change them. Keys are strings.
//
// Every call runs under the operation's context: its deadline ends a nested driver call, a
// request or a sleep, and interrupts the JavaScript itself (an endless loop included).
//
// # Limits
//
// goja runs in the ndbench process, so a runaway script is bounded whatever context it
// runs under:
//
//	initTimeout (30s)    loading the script in a runtime (its top level and init(config),
//	                     the stores it opens included); past it Init, a reload or the
//	                     operation that needed a new runtime fails as a timeout
//	callTimeout (30s)    wall-clock time of one call, whatever the operation's deadline
//	                     (the earlier applies): the JavaScript is interrupted, and a nested
//	                     call, request or sleep ends, as a timeout naming callTimeout
//	memoryLimit (512MiB) growth of the Go heap while scripts run, above the heap at load
//
// Time is wall-clock, not CPU: goja gives no CPU time per call, and wall-clock time bounds
// it. The memory limit is measured on the process's heap (live bytes after each garbage
// collection; Go has no per-goroutine accounting): past it the calls in flight fail as
// rejected, every runtime of the script is dropped (freeing what scripts kept in their
// globals), calls fail as rejected until the heap is measured again, and then start
// afresh in new runtimes, running init again. DriverStats counts memoryStops. A growth of
// the rest of ndbench past the limit while scripts run stops them once, after which the
// new heap is the base; a script allocating at Go speed (typed arrays in a loop) can
// overshoot the limit by a few doublings of the heap before it is stopped, and a single
// allocation larger than the free memory (new ArrayBuffer(1e12)) is beyond any watchdog.
// memoryLimit is part of workload.memoryBudget: the configuration refuses a limit that,
// added to the workload's own estimate (value pool, workers, validation tracker), passes
// the budget, so raising one means raising the other, within three quarters of the
// machine's memory.
//
// Close always returns within seconds: it interrupts the calls in flight (they fail as
// unavailable), waits 2 s at most for the ones in a host call, and gives the script's
// close() callTimeout, 5 s at most.
//
// # Errors
//
// A thrown NdbenchError (or fail) is counted by its class: timeout, unavailable, throttled,
// rejected or other. A nested driver's error thrown on keeps its class (a script can read
// it as e.class). Any other exception is class other, its message with the script's
// file:line:column; an operation past its deadline or callTimeout is a timeout, and one
// stopped by memoryLimit is rejected.
//
// file can name any file ndbench can read, and messages of a file that is not a script
// would quote it (a password file's "hunter2 is not defined"). It must be a regular file
// (a device such as /dev/zero would be read for ever) of 8 MiB at most; until it has run
// its top level, its errors give only the kind of error and where (SyntaxError at
// s.js:3:1), and quote nothing of the text, except parser messages made of fixed words
// (Unexpected end of input, Unexpected token ;). Errors of a loaded script (its init and
// operations) are shown whole, as are those of source, the user's own text.
//
// # Runtimes and reloads
//
// A goja runtime runs one operation at a time, so the driver keeps a pool: a runtime per
// concurrent operation, created as needed (at most runtimes, when set), each having run the
// script and init. There is no lock shared by all workers on the way. DriverStats shows
// runtimes, and interrupts: operations whose JavaScript was stopped (deadline, a limit,
// Close).
//
// The file is read every watch interval and its content hash compared (size and
// modification time miss a rewrite within the file system's timestamp granularity); new
// content is loaded once it stayed the same for one interval, so a file being written is
// not loaded half-written. A changed script is compiled and initialised in a new pool, and must define every
// operation the running one does, before it replaces it; the old pool finishes its
// operations in flight, runs close() and closes its stores. A store the new script opens
// with the same driver and options is taken over rather than opened again, so a reload
// does not reconnect, and an in-process store (memory, pebble) keeps its data. A script that fails to load
// leaves the running one in place: the error is logged, counted (DriverStats
// reloadErrors) and shown as lastReloadError in the connection info. A change of config
// reloads the same way.
//
// # Example
//
// examples/script/cache-aside.js reads through a memory cache in front of a second
// store (a memory store with a 1 ms service time standing in for a database; name redis
// and memcached with their options to compose real ones), and runs its workflow as an op
// class of its own:
//
//	driver:
//	  name: script
//	drivers:
//	  script:
//	    file: examples/script/cache-aside.js
//	    config: '{"cache": {"driver": "memory"}, "db": {"driver": "memory", "options": {"serviceTime": "1ms"}}}'
//	workload:
//	  readRate: 500
//	  writeRate: 100
//	  ops:
//	    workflow: {rate: 50, workers: 2, mix: workflow}
package script
