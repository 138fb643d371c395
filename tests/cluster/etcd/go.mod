// Builds etcd, etcdctl and etcdutl of one release from the Go modules (see tests/cluster/etcd-bins.sh,
// which copies this directory, requires the three modules at the wanted version and runs go mod tidy).
// Each binary is the main package at the root of its module (go.etcd.io/etcd/server/v3 is etcd).
module kubectl-etcd.test/etcdbuild

go 1.24
