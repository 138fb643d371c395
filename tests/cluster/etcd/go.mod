// Builds etcd, etcdctl and etcdutl of one release from the Go modules (see tests/cluster/etcd-bins.sh,
// which copies this directory, requires the three modules at the wanted version and runs go mod tidy).
// etcdctl and etcdutl are the main packages at the root of their modules; etcd is ./cmd/etcd.
module kubectl-etcd.test/etcdbuild

go 1.24
