//! Compaction, defragmentation, disarming and etcd's authentication: maintenance calls whose
//! every failure is a "not yet".

use super::Done;
use super::leader::leader_client;
use crate::engine::Context;
use crate::error::Error;
use crate::etcd::EtcdError;
use crate::model::{Desired, Observed};
use crate::plan::{AuthStep, Step};

/// Longest a member's defragmentation may take (a member answers nobody meanwhile).
const DEFRAG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// One member's defragmentation, measured (for the operator's metrics and the CLI's report).
#[derive(Clone, Debug, PartialEq)]
pub struct Defragmentation {
    pub member: String,
    /// `plan::Trigger::label`: nospace, requested or policy.
    pub trigger: &'static str,
    /// The member's database file before and after (`None`: its status did not answer).
    pub before: Option<i64>,
    pub after: Option<i64>,
    /// How long the member answered nobody.
    pub pause: std::time::Duration,
}

impl Defragmentation {
    /// Bytes given back to the file system (0 when unknown).
    pub fn won(&self) -> u64 {
        match (self.before, self.after) {
            (Some(b), Some(a)) => u64::try_from(b.saturating_sub(a)).unwrap_or(0),
            _ => 0,
        }
    }
}

/// Defragments the member at `ordinal`, measuring what it won and its pause.
async fn defragment(
    ctx: &Context,
    d: &Desired,
    o: &Observed,
    (ordinal, member, trigger): (u32, &str, &'static str),
) -> Result<Defragmentation, EtcdError> {
    let ip = o.pods.get(&ordinal).and_then(|p| p.ip.as_deref());
    let mut c = ctx.connect(d, ordinal, ip).await?;
    let before = c.status().await.ok().map(|s| s.db_size);
    let started = std::time::Instant::now();
    c.defragment(DEFRAG_TIMEOUT).await?;
    let pause = started.elapsed();
    let after = c.status().await.ok().map(|s| s.db_size);
    Ok(Defragmentation {
        member: member.to_string(),
        trigger,
        before,
        after,
        pause,
    })
}

/// Compaction, defragmentation and disarming (`plan::nospace`, `plan::maintenance`). Every
/// failure is a "not yet": the status of this pass must not record a step that did not happen
/// (`nospace::record` counts a member as defragmented from the step), and the next pass
/// observes again.
pub(super) async fn maintain(ctx: &Context, d: &Desired, o: &Observed, step: &Step) -> Done {
    let report = |source: EtcdError| {
        Error::Etcd {
            namespace: d.namespace.clone(),
            name: d.name.clone(),
            source,
        }
        .report()
    };
    let r = match step {
        Step::Compact { revision, .. } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            match c.compact(*revision).await {
                // Compacted already (auto-compaction, or a pass that stopped before its status):
                // the history up to `revision` is gone either way.
                Err(e) if report_has(&e, "required revision has been compacted") => Ok(()),
                r => r,
            }
        }
        Step::Defragment {
            ordinal, name, why, ..
        } => {
            return match defragment(ctx, d, o, (*ordinal, name, why.label())).await {
                Ok(m) => Done::Defragmented(m),
                Err(e) => Done::NotYet(report(e)),
            };
        }
        Step::DisarmNospace { members } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            let mut r = Ok(());
            for m in members {
                r = c.disarm_nospace(*m).await;
                if r.is_err() {
                    break;
                }
            }
            r
        }
        // etcd's authentication (`plan::auth`): one call each, through the leader.
        Step::Auth { part } => {
            let mut c = match leader_client(ctx, d, o).await {
                Ok(c) => c,
                Err(why) => return Done::NotYet(why),
            };
            let root = crate::etcd::ROOT;
            match part {
                AuthStep::AddRoot => c.add_user(root).await,
                AuthStep::GrantRoot => c.grant_role(root, root).await,
                AuthStep::AddEngineUser => c.add_user(&d.engine_user()).await,
                AuthStep::GrantEngineRole => c.grant_role(&d.engine_user(), root).await,
                AuthStep::Enable => c.enable_auth().await,
            }
        }
        _ => Ok(()),
    };
    match r {
        Ok(()) => Done::Changed,
        Err(e) => Done::NotYet(report(e)),
    }
}

/// Whether etcd's answer (anywhere in the error's causes) says `what`.
fn report_has(e: &EtcdError, what: &str) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = next {
        if c.to_string().contains(what) {
            return true;
        }
        next = c.source();
    }
    false
}
