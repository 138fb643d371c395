//go:build tools

// Keeps the three main packages in the module graph for go mod tidy: etcd's (the root of the
// server module: upstream's main.go there calls etcdmain.Main(os.Args)), etcdctl's and etcdutl's.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
