// The etcd server binary, as upstream's main.go at the root of etcd-io/etcd builds it (3.5, 3.6, 3.7):
// the module go.etcd.io/etcd/v3 that holds that file points its siblings at local paths with replace
// directives, so it cannot be a dependency; etcdmain is what it calls.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
