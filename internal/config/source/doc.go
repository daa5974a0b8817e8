// Package source reads configuration from where it lives outside the process: the config
// file (YAML or NDBench .properties, also watched for edits) and etcd. Each source produces
// a config.Layer and hands it to a config.Store, which validates and applies it.
//
// These readers are kept out of package config because they pull in client libraries
// (etcd's client, fsnotify, koanf's YAML): the engine and the reports import config for its
// typed values and must not link them, and only the commands that read sources do.
package source
