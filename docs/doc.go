// Package docs holds the gateway's documentation pages, one per audience (contracts, front end,
// configuration, operations, security, development), and the benchmark material under bench/.
// It has no code; its test keeps every relative link of the README and these pages resolving.
package docs
