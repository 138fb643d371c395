// Command cert-manager-testbed runs the real cert-manager controllers (the module
// github.com/cert-manager/cert-manager, pinned in go.mod) that a CA setup needs, as one host process
// against the testbed (tests/cluster/cert-manager.sh starts it).
//
// Why our own main: cert-manager's controller binary lives in a separate Go module
// (github.com/cert-manager/cert-manager/cmd/controller) that the Go module proxy does not serve, while
// the root module, which holds every controller, is served. Each controller package registers itself
// with pkg/controller in its init(); this main picks the ones below by name, builds them from one
// ContextFactory (shared informers), starts the informers and runs them. The module path lies under
// github.com/cert-manager/cert-manager/ so that cert-manager's internal/ packages could be imported too.
//
// Not here: leader election (one instance), the webhook (the API server checks the CRD schemas only),
// ACME/Vault/Venafi issuers, the ingress/gateway shims, metrics and healthz servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// the issuer types the (Cluster)Issuer controllers can set up (they register in init())
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// The controllers cert-manager enables by default, less the ACME, Vault, Venafi, shim and metrics ones.
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	// Certificate -> private key Secret, CertificateRequest, issued Secret, Ready condition
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	// CertificateRequest: approval (every request is approved), then signing by the CA/SelfSigned issuers
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
}

func main() {
	klog.InitFlags(nil) // --v=N for cert-manager's debug logs
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (empty: in-cluster config)")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets that ClusterIssuers refer to")
	readyFile := flag.String("ready-file", "", "file written once the informer caches have synced")
	workers := flag.Int("workers", 5, "workers per controller")
	flag.Parse()
	if err := run(*kubeconfig, *clusterNS, *readyFile, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-testbed:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, clusterNS, readyFile string, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log)

	// The defaults of cert-manager's controller configuration, where these controllers read them.
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: clusterNS},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}

	// Constructing a controller registers the informers it needs with the shared factories.
	known := controllerpkg.Known()
	run := make([]controllerpkg.Interface, 0, len(controllers))
	for _, name := range controllers {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		run = append(run, c)
	}

	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	for i, c := range run {
		wg.Go(func() {
			if err := c.Run(workers, ctx); err != nil {
				logf.Log.Error(err, "controller stopped", "controller", controllers[i])
				stop()
			}
		})
	}

	synced := true
	for _, ok := range shared.SharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		synced = synced && ok
	}
	for _, ok := range shared.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		synced = synced && ok
	}
	if !synced { // stopped while syncing
		wg.Wait()
		return ctx.Err()
	}
	logf.Log.Info("controllers running", "controllers", controllers)
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
			return err
		}
	}

	wg.Wait()
	return nil
}
