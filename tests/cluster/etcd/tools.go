//go:build tools

// Keeps etcdctl's and etcdutl's main packages in the module graph for go mod tidy.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
