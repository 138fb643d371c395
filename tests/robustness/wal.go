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
// merge and parser read the copies. And one more: while a NOSPACE alarm is raised, etcd's
// capped applier refuses puts, transactions that put and lease grants that were proposed and
// committed (the raft log holds them; the keyspace never sees them): those are emptied too, as
// the applier would refuse them, so the checker does not take them as applied. Returns the
// requests and the emptied requests by kind.
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
		nospace := map[uint64]bool{}
		for _, e := range ents {
			if refusedUnderNospace(e, nospace) {
				e.Data = nil
				dropped["refused-nospace"]++
				continue
			}
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

// refusedUnderNospace: whether entry e is a request etcd's capped applier refuses (a put, a
// transaction with a put in either branch, a lease grant) because a NOSPACE alarm is raised,
// following the alarm requests of the log in order in `raised` (member id -> raised).
func refusedUnderNospace(e *raftpb.Entry, raised map[uint64]bool) bool {
	if e.GetType() != raftpb.EntryNormal || len(e.Data) == 0 {
		return false
	}
	var r pb.InternalRaftRequest
	if err := proto.Unmarshal(e.Data, &r); err != nil {
		return false
	}
	if a := r.Alarm; a != nil {
		if a.Alarm == pb.AlarmType_NOSPACE {
			switch a.Action {
			case pb.AlarmRequest_ACTIVATE:
				raised[a.MemberID] = true
			case pb.AlarmRequest_DEACTIVATE:
				delete(raised, a.MemberID)
			}
		}
		return false
	}
	if len(raised) == 0 {
		return false
	}
	return r.Put != nil || r.LeaseGrant != nil || (r.Txn != nil && txnPuts(r.Txn))
}

// txnPuts: whether a transaction puts in either branch (nested transactions too).
func txnPuts(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil {
				return true
			}
			if nested := op.GetRequestTxn(); nested != nil && txnPuts(nested) {
				return true
			}
		}
	}
	return false
}
