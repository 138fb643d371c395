package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/datadir"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/tests/v3/robustness/model"
	"go.etcd.io/etcd/tests/v3/robustness/report"
	"go.etcd.io/raft/v3/raftpb"
)

// persistedRequests is etcd's report.PersistedRequests over the members' WAL files, after one
// adaptation: etcd's WAL parser panics on raft requests its own tests never issue ("Unhandled
// raft request"), and a cluster kubectl-etcd manages carries some (alarms when the quota is hit,
// lease checkpoints, auth). Those change no key, so each member's WAL is copied into a scratch
// data dir with their payload emptied (an empty entry is what etcd's parser skips), and etcd's
// merge and parser read the copies. Returns the requests and the emptied requests by kind.
func persistedRequests(lg *zap.Logger, dataDirs []string) ([]model.EtcdRequest, string, error) {
	scratch, err := os.MkdirTemp("", "robustness-wal-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(scratch)
	dropped := map[string]int{}
	copies := []string{}
	for i, dir := range dataDirs {
		state, ents, err := report.ReadWAL(lg, dir)
		if err != nil {
			// as etcd's reader does: a member whose WAL cannot be read gives no votes
			lg.Warn("skipping a member's WAL", zap.String("data-dir", dir), zap.Error(err))
			continue
		}
		for _, e := range ents {
			if kind := keyless(e); kind != "" {
				e.Data = nil
				dropped[kind]++
			}
		}
		copyDir := fmt.Sprintf("%s/%d", scratch, i)
		w, err := wal.Create(lg, datadir.ToWALDir(copyDir), nil)
		if err != nil {
			return nil, "", err
		}
		if state == nil {
			state = &raftpb.HardState{}
		}
		if err := w.Save(state, ents); err != nil {
			w.Close()
			return nil, "", err
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		copies = append(copies, copyDir)
	}
	kinds := []string{}
	for k, n := range dropped {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(kinds)
	reqs, err := report.PersistedRequests(lg, copies)
	return reqs, strings.Join(kinds, " "), err
}

// keyless names the kind of a normal entry etcd's parser does not handle ("" for the rest).
func keyless(e *raftpb.Entry) string {
	if e.GetType() != raftpb.EntryNormal || len(e.Data) == 0 {
		return ""
	}
	var r pb.InternalRaftRequest
	if err := proto.Unmarshal(e.Data, &r); err != nil {
		return "" // etcd's parser decides (it skips v2 requests of older members)
	}
	switch {
	case r.Put != nil, r.DeleteRange != nil, r.LeaseRevoke != nil, r.LeaseGrant != nil,
		r.ClusterMemberAttrSet != nil, r.ClusterVersionSet != nil, r.DowngradeInfoSet != nil,
		r.Compaction != nil, r.Txn != nil:
		return ""
	}
	name := "empty"
	r.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if f.Name() == "header" {
			return true
		}
		name = string(f.Name())
		return false
	})
	return name
}
