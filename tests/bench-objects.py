#!/usr/bin/env python3
"""One 1 MiB etcd value of Kubernetes-like objects for tests/bench-backup.sh (DATA=objects).

usage: bench-objects.py SEED > value

JSON Pods (the kind a cluster holds most of) with their own uids, names, hashes, IPs, times and
resource versions, and one Secret in eight with random bytes in base64 (keys, certificates,
tokens): what a Kubernetes cluster's etcd holds, compressible as that is, not a repeated text.
The same seed gives the same value.
"""
import base64
import json
import random
import sys
import uuid

SIZE = 1 << 20
APPS = ["api", "web", "worker", "billing", "search", "auth", "cart", "ingest", "report", "mailer",
        "cache", "gateway", "scheduler", "indexer", "notifier", "metrics"]


def stamp(r):
    return "2026-%02d-%02dT%02d:%02d:%02dZ" % (r.randint(1, 12), r.randint(1, 28), r.randint(0, 23),
                                              r.randint(0, 59), r.randint(0, 59))


def pod(r):
    app, ns = r.choice(APPS), "team-%d" % r.randrange(40)
    rs_hash = "%010x" % r.getrandbits(40)
    name = "%s-%s-%05x" % (app, rs_hash, r.getrandbits(20))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "uid": str(uuid.UUID(int=r.getrandbits(128))),
            "resourceVersion": str(r.randrange(10**9)), "creationTimestamp": stamp(r),
            "generateName": "%s-%s-" % (app, rs_hash),
            "labels": {"app": app, "pod-template-hash": rs_hash, "tier": r.choice(["frontend", "backend"])},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "%s-%s" % (app, rs_hash),
                                 "uid": str(uuid.UUID(int=r.getrandbits(128))), "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "containers": [{
                "name": app, "image": "registry.example.com/%s/%s:v1.%d.%d" % (ns, app, r.randrange(40), r.randrange(10)),
                "ports": [{"containerPort": r.choice([8080, 8443, 9090]), "protocol": "TCP"}],
                "env": [{"name": "CONFIG_REVISION", "value": "%08x" % r.getrandbits(32)},
                        {"name": "LOG_LEVEL", "value": r.choice(["info", "debug", "warn"])}],
                "resources": {"requests": {"cpu": "%dm" % r.choice([50, 100, 250, 500]),
                                           "memory": "%dMi" % r.choice([64, 128, 256, 512])}},
                "volumeMounts": [{"name": "kube-api-access-%05x" % r.getrandbits(20),
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
            }],
            "nodeName": "node-%03d" % r.randrange(200), "serviceAccountName": app,
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        },
        "status": {
            "phase": "Running", "podIP": "10.%d.%d.%d" % (r.randrange(256), r.randrange(256), r.randrange(256)),
            "hostIP": "192.168.%d.%d" % (r.randrange(256), r.randrange(256)), "startTime": stamp(r),
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp(r)}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": app, "ready": True, "restartCount": r.randrange(5),
                                   "containerID": "containerd://%064x" % r.getrandbits(256),
                                   "imageID": "registry.example.com/%s@sha256:%064x" % (app, r.getrandbits(256))}],
        },
    }


def secret(r):
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "%s-tls-%05x" % (r.choice(APPS), r.getrandbits(20)), "namespace": "team-%d" % r.randrange(40),
                     "uid": str(uuid.UUID(int=r.getrandbits(128))), "resourceVersion": str(r.randrange(10**9))},
        "data": {"tls.crt": base64.b64encode(r.randbytes(r.randrange(900, 1800))).decode(),
                 "tls.key": base64.b64encode(r.randbytes(r.randrange(1100, 1700))).decode()},
    }


def main():
    r = random.Random(int(sys.argv[1]))
    out = []
    size = 0
    while size < SIZE:
        line = json.dumps(secret(r) if r.randrange(8) == 0 else pod(r), separators=(",", ":"))
        out.append(line)
        size += len(line) + 1
    sys.stdout.write("\n".join(out)[:SIZE])


if __name__ == "__main__":
    main()
