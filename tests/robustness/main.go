// Command robustness runs etcd's own robustness traffic (go.etcd.io/etcd/tests/v3/robustness:
// key-value and watch traffic, the recorded history, validation with etcd's linearizability
// model through porcupine and its watch checks) against a running cluster while a fault-matrix
// row of kubectl-etcd applies its fault, and judges the history when told to stop.
//
//	robustness --endpoints 10.0.0.5:2379,10.0.0.6:2379 --cluster-endpoint 10.96.0.9:2379 \
//	  --cacert ca.crt --cert tls.crt --key tls.key --server-name demo-client.ns.svc \
//	  --stop-file /tmp/x/stop [--duration 60s] [--ready-file /tmp/x/ready]
//
// The database must be empty when it starts (etcd's model starts at revision 1); it creates
// the ready file once it has read revision 1 and its traffic runs. On stop (the stop file
// appears, or the duration passed) it finishes the traffic, puts a last key (the model needs a
// last successful write), collects every event up to the last revision with a watch through
// the cluster endpoint, and validates. The stop file may list, one a line:
//
//	data-dir PATH                              a member's data dir: its WAL gives the
//	                                           persisted requests the watch checks replay
//	put STREAM KEY VALUE CALL RET REV          a put by another writer (CALL, RET: Unix ns;
//	                                           REV 0: not acknowledged)
//	put-repeat STREAM KEY CHAR LEN CALL RET REV  the same, the value LEN times CHAR
//	compact STREAM REV CALL RET DONE           a compaction (DONE 1: acknowledged)
//
// Each STREAM is one sequential client in the history, so that the model accounts for every
// revision the cluster handed out.
//
// It prints one JSON line {"operations":N,"watch_events":N,"linearizable":bool,
// "linearization":"…","watch":"…","serializable":"…","error":"…"} and exits 1 on a violation,
// 2 when it could not check (bad flags, no empty database, no last write).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/tests/v3/robustness/client"
	"go.etcd.io/etcd/tests/v3/robustness/identity"
	"go.etcd.io/etcd/tests/v3/robustness/model"
	"go.etcd.io/etcd/tests/v3/robustness/report"
	"go.etcd.io/etcd/tests/v3/robustness/traffic"
	"go.etcd.io/etcd/tests/v3/robustness/validate"
)

// The load: far below etcd's KeyValueVeryLow (50-100 qps). Four rows run at once on the
// 2-core testbed, some with a 16 MiB quota: at 30 qps a row's history grew to 15 000 operations,
// porcupine timed out on it, and the load kept the rows from converging.
var (
	keyValue = traffic.KeyValue{
		MinimalQPS:                     2,
		MaximalQPS:                     6,
		BurstableQPS:                   6,
		MemberClientCount:              3,
		ClusterClientCount:             1,
		MaxNonUniqueRequestConcurrency: 2,
	}
	watch = traffic.Watch{
		MemberClientCount:   1,
		ClusterClientCount:  1,
		RevisionOffsetRange: traffic.Range{Min: -100, Max: 100},
	}
)

type outcome struct {
	Operations    int    `json:"operations"`
	WatchEvents   int    `json:"watch_events"`
	Linearizable  bool   `json:"linearizable"`
	Linearization string `json:"linearization"`
	Watch         string `json:"watch"`
	Serializable  string `json:"serializable"`
	// raft requests in the WAL that change no key (alarms, lease checkpoints, …), by kind
	KeylessRequests string `json:"keyless_requests,omitempty"`
	Error           string `json:"error,omitempty"`
}

func main() {
	endpoints := flag.String("endpoints", "", "members' client endpoints host:port, comma-separated")
	clusterEndpoint := flag.String("cluster-endpoint", "", "the client Service host:port (cluster clients and the event collector)")
	cacert := flag.String("cacert", "", "CA bundle (TLS; empty: plain)")
	cert := flag.String("cert", "", "client certificate")
	key := flag.String("key", "", "client key")
	serverName := flag.String("server-name", "", "name to verify the members' certificates against")
	stopFile := flag.String("stop-file", "", "stop once this file exists (see the package doc for its lines)")
	readyFile := flag.String("ready-file", "", "created once the traffic runs")
	targetsFile := flag.String("targets-file", "", "lines NAME HOST:PORT read at each new connection: where member-<i> and cluster are now (pods and Services come back at new addresses)")
	duration := flag.Duration("duration", 0, "stop after this long (0: only the stop file)")
	flag.Parse()
	out, code := run(*endpoints, *clusterEndpoint, tlsFiles{*cacert, *cert, *key, *serverName, *targetsFile}, *stopFile, *readyFile, *duration)
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	os.Exit(code)
}

type tlsFiles struct{ ca, cert, key, serverName, targets string }

func run(endpoints, clusterEndpoint string, tf tlsFiles, stopFile, readyFile string, duration time.Duration) (outcome, int) {
	fail := func(err error) (outcome, int) { return outcome{Error: err.Error()}, 2 }
	if clusterEndpoint == "" || (stopFile == "" && duration == 0) {
		return fail(errors.New("--cluster-endpoint and one of --stop-file/--duration are needed"))
	}
	lg, err := zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return fail(err)
	}
	members := []string{}
	for e := range strings.SplitSeq(endpoints, ",") {
		if e != "" {
			members = append(members, e)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dial, err := newDialer(ctx, tf)
	if err != nil {
		return fail(err)
	}
	cluster, err := dial.local("cluster", clusterEndpoint)
	if err != nil {
		return fail(err)
	}
	memberEps := []string{}
	for i, m := range members {
		l, err := dial.local(fmt.Sprintf("member-%d", i), m)
		if err != nil {
			return fail(err)
		}
		memberEps = append(memberEps, l)
	}
	if len(memberEps) == 0 {
		memberEps = []string{cluster}
	}
	all := append([]string{cluster}, memberEps...)

	baseTime := time.Now()
	ids := identity.NewIDProvider()
	trafficSet := client.NewSet(ids, baseTime)
	defer trafficSet.Close()
	watchSet := client.NewSet(ids, baseTime)
	defer watchSet.Close()

	// etcd's check that the database is empty, bounded (it retries for ever)
	emptyCtx, emptyCancel := context.WithTimeout(ctx, 2*time.Minute)
	err = traffic.CheckEmptyDatabaseAtStart(emptyCtx, zap.NewNop(), []string{cluster}, trafficSet)
	emptyCancel()
	if err != nil {
		return fail(fmt.Errorf("checking the database is empty at start: %w", err))
	}

	maxRevision := make(chan int64, 1)
	var collectErr error
	var collectWg sync.WaitGroup
	collectWg.Add(1)
	collectCtx, collectCancel := context.WithCancel(ctx)
	defer collectCancel()
	go func() {
		defer collectWg.Done()
		collectErr = client.CollectClusterWatchEvents(collectCtx, client.CollectClusterWatchEventsParam{
			Lg: lg, Endpoints: []string{cluster}, MaxRevisionChan: maxRevision, ClientSet: watchSet,
		})
	}()

	wg := sync.WaitGroup{}
	finish := make(chan struct{})
	limiter := rate.NewLimiter(rate.Limit(keyValue.MaximalQPS), keyValue.BurstableQPS)
	keyStore := traffic.NewKeyStore(10, "key")
	storage := traffic.NewKubernetesStorage()
	tr := traffic.EtcdPutDeleteLease
	// member clients take the members in turn; cluster clients all endpoints
	kv := keyValue
	if err := traffic.SimulateKeyValueTraffic(ctx, &wg, &kv, all, trafficSet, tr, traffic.RunTrafficLoopParam{
		QPSLimiter:                         limiter,
		IDs:                                ids,
		LeaseIDStorage:                     identity.NewLeaseIDStorage(),
		NonUniqueRequestConcurrencyLimiter: traffic.NewConcurrencyLimiter(kv.MaxNonUniqueRequestConcurrency),
		KeyStore:                           keyStore,
		Storage:                            storage,
		Finish:                             finish,
	}); err != nil {
		return fail(err)
	}
	w := watch
	if err := traffic.SimulateWatchTraffic(ctx, &wg, &w, all, trafficSet, tr, traffic.RunWatchLoopParam{
		Config: w, QPSLimiter: limiter, KeyStore: keyStore, Storage: storage, Finish: finish, Logger: lg,
	}); err != nil {
		return fail(err)
	}
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte("ready\n"), 0o644); err != nil {
			return fail(err)
		}
	}

	stop := waitForStop(stopFile, duration)
	close(finish)
	wg.Wait()
	time.Sleep(time.Second)
	if err := lastPut(ctx, trafficSet, all); err != nil {
		collectCancel()
		return fail(err)
	}
	reports := trafficSet.Reports()
	foreign, dataDirs, err := readStopFile(stop, ids, baseTime)
	if err != nil {
		collectCancel()
		return fail(err)
	}
	maxRev := report.OperationsMaxRevision(append(reports, foreign...))
	maxRevision <- maxRev
	close(maxRevision)
	collected := make(chan struct{})
	go func() { collectWg.Wait(); close(collected) }()
	select {
	case <-collected:
	case <-time.After(2 * time.Minute):
		collectCancel()
		<-collected
	}
	all2 := append(append(reports, watchSet.Reports()...), foreign...)

	res := outcome{}
	for _, r := range all2 {
		res.Operations += len(r.KeyValue)
		res.WatchEvents += r.WatchEventCount()
	}
	if collectErr != nil {
		res.Error = fmt.Sprintf("collecting every event up to revision %d: %v", maxRev, collectErr)
	}
	var persisted []model.EtcdRequest
	if len(dataDirs) > 0 {
		persisted, res.KeylessRequests, err = persistedRequests(lg, dataDirs)
		if err != nil {
			res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + "reading the members' WAL: " + err.Error()
		}
	} else {
		res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + "no member data dir given: the watch checks need the persisted requests"
	}
	result := validate.ValidateAndReturnVisualize(lg, validate.Config{ExpectRevisionUnique: tr.ExpectUniqueRevision()}, all2, persisted, 5*time.Minute)
	if err := result.Assumptions.Error(); err != nil {
		res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + "assumptions: " + err.Error()
	}
	res.Linearizable = result.Linearization.Status == validate.Success
	res.Linearization = status(result.Linearization.Result)
	res.Watch = status(result.Watch)
	res.Serializable = status(result.Serializable)
	switch {
	case result.Assumptions.Error() != nil || result.Linearization.Status != validate.Success:
		return res, 1
	case result.Watch.Status != validate.Success || result.Serializable.Status != validate.Success:
		return res, 1
	case res.Error != "":
		return res, 1
	}
	return res, 0
}

func status(r validate.Result) string {
	if r.Status == validate.Unknown {
		return "not checked"
	}
	return r.String()
}

// waitForStop returns the stop file's path once it exists, or "" when the duration passed.
func waitForStop(stopFile string, duration time.Duration) string {
	var deadline <-chan time.Time
	if duration > 0 {
		deadline = time.After(duration)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline:
			return ""
		case <-tick.C:
			if stopFile == "" {
				continue
			}
			if _, err := os.Stat(stopFile); err == nil {
				return stopFile
			}
		}
	}
}

// lastPut: validation requires the last operation to succeed (as etcd's SimulateTraffic does).
func lastPut(ctx context.Context, cs *client.ClientSet, endpoints []string) error {
	c, err := cs.NewClient(endpoints)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = c.Put(pctx, "tombstone", "true")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the last put failed for 2 min (validation needs a last successful write): %w", err)
		}
		time.Sleep(time.Second)
	}
}

// readStopFile: the other writers' operations, one client history per stream, and the
// members' data dirs.
func readStopFile(path string, ids identity.Provider, baseTime time.Time) ([]report.ClientReport, []string, error) {
	if path == "" {
		return nil, nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var dirs []string
	streams := map[string]*model.AppendableHistory{}
	order := []string{}
	history := func(stream string) *model.AppendableHistory {
		h, ok := streams[stream]
		if !ok {
			h = model.NewAppendableHistory(ids)
			streams[stream] = h
			order = append(order, stream)
		}
		return h
	}
	base := baseTime.UnixNano()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		bad := func(err error) error { return fmt.Errorf("%s line %d: %w", path, n, err) }
		nums := func(xs ...string) ([]int64, error) {
			out := make([]int64, len(xs))
			for i, x := range xs {
				v, err := strconv.ParseInt(x, 10, 64)
				if err != nil {
					return nil, bad(err)
				}
				out[i] = v
			}
			return out, nil
		}
		switch {
		case len(fs) == 0:
		case fs[0] == "data-dir" && len(fs) == 2:
			dirs = append(dirs, fs[1])
		case (fs[0] == "put" && len(fs) == 7) || (fs[0] == "put-repeat" && len(fs) == 8):
			// put STREAM KEY VALUE CALL RET REV | put-repeat STREAM KEY UNIT COUNT CALL RET REV (UNIT repeated COUNT times)
			value, rest := fs[3], fs[4:]
			if fs[0] == "put-repeat" {
				l, err := strconv.Atoi(fs[4])
				if err != nil {
					return nil, nil, bad(err)
				}
				value, rest = strings.Repeat(fs[3], l), fs[5:]
			}
			v, err := nums(rest...)
			if err != nil {
				return nil, nil, err
			}
			start, end := time.Duration(v[0]-base), time.Duration(v[1]-base)
			if start <= 0 {
				return nil, nil, bad(errors.New("a write before the history began: the model starts from an empty database"))
			}
			if v[2] > 0 {
				history(fs[1]).AppendPut(fs[2], value, start, end, &clientv3.PutResponse{Header: &etcdserverpb.ResponseHeader{Revision: v[2]}}, nil)
			} else {
				history(fs[1]).AppendPut(fs[2], value, start, end, nil, errors.New("not acknowledged"))
			}
		case fs[0] == "compact" && len(fs) == 6:
			// compact STREAM REV CALL RET DONE
			v, err := nums(fs[2:]...)
			if err != nil {
				return nil, nil, err
			}
			start, end := time.Duration(v[1]-base), time.Duration(v[2]-base)
			if start <= 0 {
				return nil, nil, bad(errors.New("a compaction before the history began"))
			}
			if v[3] == 1 {
				history(fs[1]).AppendCompact(v[0], start, end, &clientv3.CompactResponse{}, nil)
			} else {
				history(fs[1]).AppendCompact(v[0], start, end, nil, errors.New("not acknowledged"))
			}
		default:
			return nil, nil, bad(fmt.Errorf("unknown line %.80q", sc.Text()))
		}
	}
	reps := []report.ClientReport{}
	for _, s := range order {
		reps = append(reps, report.ClientReport{ClientID: ids.NewClientID(), KeyValue: streams[s].History.Operations()})
	}
	return reps, dirs, sc.Err()
}

// dialer: etcd's RecordingClient dials without TLS and keeps the addresses it was given; each
// endpoint gets a local listener whose connections are carried (over TLS with the client
// certificate, ALPN h2, when the cluster has TLS) to where the endpoint is now: the targets file
// is read at each new connection, so a client whose member pod came back at a new IP reconnects,
// and so are the TLS files (the test rewrites them from the client Secret), so a cluster deleted
// and created again under a new CA is dialed with its new certificates.
type dialer struct {
	ctx     context.Context
	tf      tlsFiles
	targets string
}

func newDialer(ctx context.Context, tf tlsFiles) (*dialer, error) {
	d := &dialer{ctx: ctx, tf: tf, targets: tf.targets}
	if tf.ca == "" {
		return d, nil
	}
	_, err := d.tlsConfig()
	return d, err
}

// tlsConfig: the TLS files as they are now (nil without TLS).
func (d *dialer) tlsConfig() (*tls.Config, error) {
	if d.tf.ca == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(d.tf.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", d.tf.ca)
	}
	pair, err := tls.LoadX509KeyPair(d.tf.cert, d.tf.key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: d.tf.serverName,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	}, nil
}

// target: where endpoint `name` is now (the targets file), else where it was at the start.
func (d *dialer) target(name, initial string) string {
	if d.targets == "" {
		return initial
	}
	data, err := os.ReadFile(d.targets)
	if err != nil {
		return initial
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return initial
}

// local returns the address the recording clients dial for endpoint `name`.
func (d *dialer) local(name, initial string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { <-d.ctx.Done(); l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go d.carry(c, d.target(name, initial))
		}
	}()
	return l.Addr().String(), nil
}

func (d *dialer) carry(c net.Conn, target string) {
	defer c.Close()
	var up net.Conn
	var err error
	nd := &net.Dialer{Timeout: 3 * time.Second}
	cfg, err := d.tlsConfig()
	if err != nil {
		return
	}
	if cfg == nil {
		up, err = nd.Dial("tcp", target)
	} else {
		up, err = tls.DialWithDialer(nd, "tcp", target, cfg)
	}
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
