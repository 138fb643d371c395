//! What starts a pass in `operate`: the watches of EtcdClusters (all namespaces, or one watch
//! per served namespace merged into one store) and of what the engine made for them, filtered to
//! the changes that matter (`trigger_hash`), and the work queue's settings.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, reflector, watcher, watcher::watcher as watch};
use kube::{Client, Resource, ResourceExt};

use crate::api::EtcdCluster;

/// The controller over every namespace (`namespaces` empty), or over each of `namespaces` with
/// one watch per namespace (RBAC may grant no more), merged into the one work queue: a cluster
/// lives in one namespace, so a pass of it is never queued twice.
pub(super) fn controller_for(client: &Client, namespaces: &[String]) -> Controller<EtcdCluster> {
    // Default list-then-watch: streaming lists fail on 1.20 API servers (HTTP 422).
    let (reader, writer) = reflector::store();
    if namespaces.is_empty() {
        let clusters = watch(
            Api::<EtcdCluster>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(trigger_hash, Default::default());
        return triggered_by_what_it_made(Controller::for_stream(clusters, reader), client, &[]);
    }
    // One store for every namespace: a namespace's re-list replaces only what that namespace
    // held (`Relist`), and the store counts as ready from the start (the clusters arrive as
    // applied objects). So the watches of what the engine made in a namespace start once its
    // clusters are in the store (`listed`): before, their first events named clusters the store
    // did not hold yet, and kube-runtime dropped each with a warning (three per cluster at
    // every start).
    let store = reader.clone();
    let (per_namespace, listed): (Vec<_>, Vec<_>) = namespaces
        .iter()
        .map(|ns| {
            let (lists, listed) = tokio::sync::watch::channel(false);
            let namespace = NamespaceListed {
                namespace: ns.clone(),
                listed,
            };
            (cluster_watch(client, ns, store.clone(), lists), namespace)
        })
        .unzip();
    let ready = futures::stream::iter([Ok(watcher::Event::Init), Ok(watcher::Event::InitDone)]);
    let clusters = ready
        .chain(futures::stream::select_all(per_namespace))
        .reflect(writer)
        .applied_objects()
        .predicate_filter(trigger_hash, Default::default());
    triggered_by_what_it_made(Controller::for_stream(clusters, reader), client, &listed)
}

/// A watched namespace, and whether its first list of EtcdClusters is in the store yet.
struct NamespaceListed {
    namespace: String,
    listed: tokio::sync::watch::Receiver<bool>,
}

/// The EtcdClusters of namespace `ns` as events for the store shared by every namespace
/// (`Relist`); `lists` turns true once the first list of them has passed to the store.
fn cluster_watch(
    client: &Client,
    ns: &str,
    store: reflector::Store<EtcdCluster>,
    lists: tokio::sync::watch::Sender<bool>,
) -> futures::stream::BoxStream<'static, Result<watcher::Event<EtcdCluster>, watcher::Error>> {
    let mut relist = Relist::default();
    let ns = ns.to_owned();
    watch(
        Api::<EtcdCluster>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .default_backoff()
    .flat_map(move |event| {
        // The events of the list before it went downstream already (one at a time), so at
        // its end the store holds them.
        if matches!(event, Ok(watcher::Event::InitDone)) {
            lists.send_replace(true);
        }
        let events: Vec<Result<watcher::Event<EtcdCluster>, watcher::Error>> = match event {
            Ok(e) => relist
                .step(e, || {
                    store
                        .state()
                        .iter()
                        .filter(|c| c.namespace().as_deref() == Some(ns.as_str()))
                        .map(|c| (**c).clone())
                        .collect()
                })
                .into_iter()
                .map(Ok)
                .collect(),
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(events)
    })
    .boxed()
}

/// A controller that also passes a cluster when an object the engine made for it changes: its
/// StatefulSet, Services and ConfigMaps (their owner), and its pods (by their labels: a member
/// Ready or gone, a restore pod finished; the steps that wait on them go on at once instead of at
/// the next paced look). Watched in every namespace (`namespaces` empty) or in each of them, for
/// metadata only: a change of anything, status too, moves the resourceVersion, and nothing of
/// these objects is kept, so their specs are never read, decoded or held.
fn triggered_by_what_it_made(
    controller: Controller<EtcdCluster>,
    client: &Client,
    namespaces: &[NamespaceListed],
) -> Controller<EtcdCluster> {
    controller
        .owns_stream(made::<StatefulSet>(client, namespaces))
        .owns_stream(made::<Service>(client, namespaces))
        .owns_stream(made::<ConfigMap>(client, namespaces))
        .watches_stream(made::<Pod>(client, namespaces), |pod| {
            let cluster = crate::objects::cluster_of(pod.labels())?;
            Some(ObjectRef::new(cluster).within(&pod.namespace()?))
        })
}

/// The metadata of the objects of kind `K` the engine made (the managed-by label), as they
/// change, in every namespace (`namespaces` empty) or in each of `namespaces`, there from the
/// moment its clusters are listed.
fn made<K>(
    client: &Client,
    namespaces: &[NamespaceListed],
) -> futures::stream::BoxStream<'static, Result<PartialObjectMeta<K>, watcher::Error>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let config = watcher::Config::default().labels(&crate::objects::managed_selector());
    // An `Api` of `PartialObjectMeta` asks for metadata only.
    let of = |api: Api<PartialObjectMeta<K>>| {
        watch(api, config.clone())
            .default_backoff()
            .touched_objects()
            .boxed()
    };
    if namespaces.is_empty() {
        return of(Api::all(client.clone()));
    }
    futures::stream::select_all(namespaces.iter().map(|ns| {
        once_listed(
            ns.listed.clone(),
            of(Api::namespaced(client.clone(), &ns.namespace)),
        )
    }))
    .boxed()
}

/// `objects`, from the moment `listed` is true (at once if it is already).
fn once_listed<T: Send + 'static>(
    mut listed: tokio::sync::watch::Receiver<bool>,
    objects: futures::stream::BoxStream<'static, T>,
) -> futures::stream::BoxStream<'static, T> {
    futures::stream::once(async move {
        // An error: the cluster watch is gone, and with it the controller.
        let _ = listed.wait_for(|listed| *listed).await;
        objects
    })
    .flatten()
    .boxed()
}

/// The work queue's settings. kube-runtime runs each pass in a task of its own, and never two
/// passes of one cluster at once (a cluster's next pass waits for its last); passes of different
/// clusters are not bounded: a bound would make every cluster wait behind the long steps in the
/// slots (dials to unreachable members when a node goes, pre-upgrade snapshots,
/// defragmentations), the very wait this operator promises not to make.
pub(super) fn queue_config() -> controller::Config {
    controller::Config::default().concurrency(0)
}

/// One namespace's watch events, fed to a store shared with other namespaces' watches. The
/// watcher's re-list (`Init`, `InitApply`…, `InitDone`) would replace the whole store with this
/// namespace's objects; instead its objects are applied one by one, and at `InitDone` the
/// clusters the store still holds for this namespace but the re-list did not return are
/// deleted (they went while the watch was down). Pure: the store's view is passed in.
#[derive(Default)]
struct Relist {
    /// The clusters listed since `Init`, while a re-list runs.
    seen: Option<std::collections::HashSet<ObjectRef<EtcdCluster>>>,
}

impl Relist {
    /// The events for the shared store in place of `event`; `held` gives the clusters the
    /// store holds for this namespace.
    fn step(
        &mut self,
        event: watcher::Event<EtcdCluster>,
        held: impl FnOnce() -> Vec<EtcdCluster>,
    ) -> Vec<watcher::Event<EtcdCluster>> {
        use watcher::Event as E;
        match event {
            E::Init => {
                self.seen = Some(Default::default());
                vec![]
            }
            E::InitApply(c) => {
                self.seen
                    .get_or_insert_with(Default::default)
                    .insert(ObjectRef::from_obj(&c));
                vec![E::Apply(c)]
            }
            E::InitDone => {
                let seen = self.seen.take().unwrap_or_default();
                held()
                    .into_iter()
                    .filter(|c| !seen.contains(&ObjectRef::from_obj(c)))
                    .map(E::Delete)
                    .collect()
            }
            e @ (E::Apply(_) | E::Delete(_)) => vec![e],
        }
    }
}

/// What makes a change of an EtcdCluster itself a reason for a pass: its spec (generation),
/// deletion, finalizers and annotations. Status is not: every pass writes it (member raft
/// indexes move with every etcd write), and reacting to our own writes would start the next pass
/// at once, every time, defeating the requeue intervals. Owned objects still trigger passes.
fn trigger_hash(c: &EtcdCluster) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    c.metadata.generation.hash(&mut h);
    c.metadata.deletion_timestamp.is_some().hash(&mut h);
    c.finalizers().hash(&mut h);
    c.annotations().hash(&mut h);
    Some(h.finish())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::engine;
    use futures::FutureExt;

    #[test]
    fn status_writes_do_not_trigger_a_pass_but_spec_deletion_and_annotations_do() {
        let mut c = crate::fixtures::cluster("demo").build();
        let base = trigger_hash(&c);
        c.status = Some(crate::api::EtcdClusterStatus {
            replicas: 3,
            message: Some("converged".into()),
            ..Default::default()
        });
        c.metadata.resource_version = Some("42".into());
        assert_eq!(
            trigger_hash(&c),
            base,
            "status and resourceVersion are ignored"
        );
        let changed = |f: &dyn Fn(&mut EtcdCluster)| {
            let mut d = c.clone();
            f(&mut d);
            trigger_hash(&d) != base
        };
        assert!(changed(&|d| d.metadata.generation = Some(8)));
        assert!(changed(&|d| d.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH)
        )));
        assert!(changed(
            &|d| d.metadata.finalizers = Some(vec![crate::api::FINALIZER.into()])
        ));
        assert!(changed(&|d| {
            d.annotations_mut()
                .insert(engine::ANNOTATION_DELETE_DATA.into(), "true".into());
        }));
    }

    pub(in crate::operate) fn in_ns(name: &str, ns: &str) -> EtcdCluster {
        let mut c = crate::fixtures::cluster(name).build();
        c.metadata.namespace = Some(ns.into());
        c
    }

    fn names(events: &[watcher::Event<EtcdCluster>]) -> Vec<String> {
        use watcher::Event as E;
        events
            .iter()
            .map(|e| match e {
                E::Apply(c) => format!("apply {}", c.name_any()),
                E::Delete(c) => format!("delete {}", c.name_any()),
                E::Init => "init".into(),
                E::InitApply(c) => format!("init-apply {}", c.name_any()),
                E::InitDone => "init-done".into(),
            })
            .collect()
    }

    #[tokio::test]
    async fn the_made_objects_of_a_namespace_pass_only_once_its_clusters_are_listed() {
        let (lists, listed) = tokio::sync::watch::channel(false);
        let mut objects = once_listed(listed, futures::stream::iter([1, 2]).boxed());
        assert_eq!(
            objects.next().now_or_never(),
            None,
            "nothing before the list"
        );
        lists.send_replace(true);
        assert_eq!(objects.collect::<Vec<_>>().await, [1, 2]);
        let (_lists, listed) = tokio::sync::watch::channel(true);
        let objects = once_listed(listed, futures::stream::iter([3]).boxed());
        assert_eq!(objects.collect::<Vec<_>>().await, [3], "listed already");
    }

    #[test]
    fn a_namespace_relist_applies_its_clusters_and_deletes_only_its_vanished_ones() {
        use watcher::Event as E;
        let mut r = Relist::default();
        let none = Vec::new;
        assert!(r.step(E::Init, none).is_empty(), "the store is not reset");
        assert_eq!(
            names(&r.step(E::InitApply(in_ns("a", "team-a")), none)),
            ["apply a"]
        );
        // The store holds a (just applied) and b, which went while the watch was down; the
        // other namespaces' clusters are not in `held` at all.
        let held = || vec![in_ns("a", "team-a"), in_ns("b", "team-a")];
        assert_eq!(names(&r.step(E::InitDone, held)), ["delete b"]);
        // Between re-lists, events pass as they are.
        assert_eq!(
            names(&r.step(E::Apply(in_ns("c", "team-a")), none)),
            ["apply c"]
        );
        assert_eq!(
            names(&r.step(E::Delete(in_ns("c", "team-a")), none)),
            ["delete c"]
        );
        // The next re-list starts afresh: what the last one saw counts no more.
        assert!(r.step(E::Init, none).is_empty());
        assert_eq!(names(&r.step(E::InitDone, held)), ["delete a", "delete b"]);
    }
}
