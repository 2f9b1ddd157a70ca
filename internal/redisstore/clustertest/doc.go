// Package clustertest holds the integration tests that run the session store and the whole
// gateway on Redis beyond one machine: a three-master Redis Cluster and a Sentinel-watched
// master, each started from the real redis-server and redis-cli binaries on loopback ports for
// the length of a test. It has no code outside its tests.
//
// Under CI (CI=true) missing Redis binaries fail the tests; elsewhere they skip them.
package clustertest
