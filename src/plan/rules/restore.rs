//! A cluster restored from a snapshot: the seed's restore, its done-mark, the restore pod.

use super::*;

/// The done-mark `status.completed.restore` keeps for `spec.restore`: its nonce, else its URL.
fn restore_done_mark(r: &crate::model::RestoreSource) -> &str {
    r.nonce.as_deref().unwrap_or(&r.url)
}

/// `spec.restore` itself, not the restore a recovery settles into `d.restore` (its nonce is the
/// recovery's): a recovery's restore is the recovery's to mark (`status.completed.recovery`), and
/// the seed's claim may carry an earlier restore's mark while it deletes the old members.
fn own_restore(d: &Desired) -> Option<&crate::model::RestoreSource> {
    d.restore.as_ref().filter(|r| {
        d.recovery
            .as_ref()
            .is_none_or(|rec| r.nonce.as_deref() != Some(rec.nonce.as_str()))
    })
}

/// `status.completed.restore` after a pass: the mark kept, or the spec's restore once the seed
/// runs on its restored volume (the StatefulSet made on it). From then on the snapshot is never
/// restored again: a cluster that later loses every volume and object is a recovery's to
/// rebuild, not an old snapshot's to roll back to silently.
pub(in crate::plan) fn restore_completed_mark(d: &Desired, o: &Observed) -> Option<String> {
    let restored = o.statefulset.is_some()
        && o.volumes
            .values()
            .any(|v| !v.terminating && v.restore == Some(RestoreMark::Restored));
    match own_restore(d) {
        Some(r) if restored => Some(restore_done_mark(r).to_string()),
        _ => o.completed.restore.clone(),
    }
}

/// A cluster restored from a snapshot, before its StatefulSet exists: the seed's volume is filled by
/// the restore pod (its certificates are made meanwhile), then the seed alone is bootstrapped on it
/// (the others join as learners).
///
/// The restore runs once: its claim carries `RestoreMark::Restoring` from the moment the restore
/// makes it, and `Restored` from the seed's bootstrap on. `None` once the seed was bootstrapped (the
/// member config or the StatefulSet exists, or the seed's volume says `Restored`: a restored
/// cluster whose objects were deleted, or deleted and applied again, comes back on its volumes like
/// any other), and for clusters not restored. Volumes the restore did not make (an earlier
/// cluster's, kept by `delete`) are never restored over: the rule holds and names them.
pub(in crate::plan) fn restore_seed(d: &Desired, o: &Observed) -> Option<Step> {
    let r = d.restore.as_ref()?;
    if o.config.is_some()
        || o.statefulset.is_some()
        || own_restore(d)
            .is_some_and(|r| o.completed.restore.as_deref() == Some(restore_done_mark(r)))
    {
        return None;
    }
    if o.volumes
        .values()
        .any(|v| !v.terminating && v.restore == Some(RestoreMark::Restored))
    {
        return None;
    }
    if o.restore_pod.is_none()
        && let Some(v) = o.volumes.values().find(|v| v.terminating)
    {
        // `recover` deleted the old members' volumes: the seed's claim gets a new one.
        return Some(wait(
            Reason::RestoringSnapshot,
            format!("old volume {} is being deleted", v.name),
        ));
    }
    let foreign: Vec<&str> = o
        .volumes
        .iter()
        .filter(|(ord, v)| {
            let the_restores_own = **ord == 0 && v.restore == Some(RestoreMark::Restoring);
            !v.terminating && !the_restores_own
        })
        .map(|(_, v)| v.name.as_str())
        .collect();
    if !foreign.is_empty() {
        return Some(hold(
            Reason::RestoreFailed,
            format!(
                "volumes of an earlier cluster named {} exist ({}): restoring {} over them would \
                 destroy their data. To start from the snapshot, delete them (kubectl etcd delete \
                 {} --delete-data --yes) or restore under another name; to keep their data, \
                 remove spec.restore",
                d.name,
                foreign.join(", "),
                r.url,
                d.name
            ),
        ));
    }
    let restore_pod = crate::objects::restore::pod_name(&d.name);
    Some(match &o.restore_pod {
        None => Step::RestoreSeed { url: r.url.clone() },
        // The TLS material the members need is made meanwhile (it does not depend on the
        // snapshot): the seed starts as soon as its volume is filled.
        Some(RestorePodView::Running) => certificate_to_make(d, o).unwrap_or_else(|| {
            wait(
                Reason::RestoringSnapshot,
                format!(
                    "restoring {} into the volume of {}",
                    r.url,
                    objects::pod_name(&d.name, 0)
                ),
            )
        }),
        Some(RestorePodView::Retrying(why)) => certificate_to_make(d, o).unwrap_or_else(|| {
            wait(
                Reason::RestoringSnapshot,
                format!(
                    "restoring {} into the volume of {}: the download fails and is tried again \
                     for about five minutes ({why})",
                    r.url,
                    objects::pod_name(&d.name, 0)
                ),
            )
        }),
        Some(RestorePodView::Stuck(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore pod {restore_pod} cannot start ({why}); {}, the restore then goes on \
                 by itself",
                restore_pod_fix(d, why)
            ),
        ),
        // Found unusable while verified whole, before a byte was restored: a damaged backup,
        // which no retry mends. (A download that broke off and could not go on is a storage
        // failure, held below with the advice to retry.)
        Some(RestorePodView::Failed(why)) if why.contains(crate::archive::fetch::UNUSABLE) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore pod {restore_pod} found {} unusable ({why}); nothing was \
                     restored: for a damaged backup, delete this cluster (kubectl etcd -n {} \
                     delete {} --delete-data --yes) and restore another; else fix the cause, then \
                     delete pod {restore_pod} to retry",
                r.url, d.namespace, d.name
            ),
        ),
        Some(RestorePodView::Failed(why)) => hold(
            Reason::RestoreFailed,
            format!(
                "the restore from {} failed ({why}); fix the cause, then delete pod {restore_pod} \
                 to retry",
                r.url,
            ),
        ),
        Some(RestorePodView::Succeeded) => Step::Bootstrap { replicas: 1 },
    })
}

/// What to change for a restore pod that cannot start: the field of its image when the nodes
/// cannot pull it.
fn restore_pod_fix(d: &Desired, why: &str) -> String {
    let pull = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]
        .iter()
        .any(|r| why.contains(r));
    if !pull {
        return "fix the cause (a missing Secret or image)".into();
    }
    format!(
        "set {}.toolsImage to an image of kubectl-etcd the nodes can pull (the `--tools-image` of \
         restore and recover)",
        if d.recovery.is_some() {
            "spec.recovery"
        } else {
            "spec.restore"
        }
    )
}

/// A certificate the PKI rules would issue or request now (not their waits or holds, which speak
/// in their turn once the restore is done).
fn certificate_to_make(d: &Desired, o: &Observed) -> Option<Step> {
    crate::plan::pki::certificates(d, o)
        .or_else(|| crate::plan::pki::cert_manager_certificates(d, o))
        .filter(|s| {
            matches!(
                s,
                Step::IssueCertificate { .. } | Step::RequestCertificate { .. }
            )
        })
}

/// The restore pod has done its work once the seed runs from the StatefulSet.
pub(in crate::plan) fn restore_pod_left(d: &Desired, o: &Observed) -> Option<Step> {
    o.restore_pod.as_ref()?;
    Some(Step::DeleteRestorePod {
        pod: crate::objects::restore::pod_name(&d.name),
    })
}
