// cache-aside.js: reads go to a cache first and fall back to a database, filling the
// cache on a miss; writes go to the database, then to the cache.
// config: {"cache": {"driver": "memory", "options": {}},
//          "db":    {"driver": "memory", "options": {"serviceTime": "1ms"}}}

var cache, db;

function init(config) {
	var c = config.cache || { driver: "memory" };
	var d = config.db || { driver: "memory" };
	cache = stores.open(c.driver, c.options || {});
	db = stores.open(d.driver, d.options || {});
}

function read(key) {
	var v = cache.read(key);
	if (v !== null) {
		return v;
	}
	v = db.read(key);
	if (v !== null) {
		cache.write(key, v);
	}
	return v; // null: a miss
}

function write(key, value) {
	db.write(key, value);
	cache.write(key, value);
}

// workflow is NDBench's runWorkFlow: read through the cache, and on a miss write a fresh
// value to both stores.
function workflow(key) {
	if (read(key) === null) {
		write(key, randomBytes(128));
	}
}
