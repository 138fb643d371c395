//! Backups of a running cluster, below the engine (which carries out the backup steps and is the
//! drivers' way to them) and above `reach` (dialing members): taking one (`take`, the one
//! recipe: member choice, the streamed snapshot, the `EtcdBackup` record), running the schedules
//! (`scheduled`) and reaching a claim's backups through an agent pod (`pvc`). What needs no
//! cluster — storage, encoding, the pvc frames, fetching and verifying a stored snapshot,
//! retention, cron — is the `archive` room's; the restore pod is `objects::restore`;
//! `BackupError` sits with the other errors in `error`.

pub mod drill;
pub mod pvc;
pub mod scheduled;
pub mod take;

// Which records are whose, and their labels: pure, below the planner (`model::records`); the
// paths `backup::select` and `backup::label` stay for the code that takes and prunes backups.
pub use crate::model::records::{label, select};

// Fetching needs no cluster and lives in the archive; the path `backup::fetch` stays for the
// verbs that use it.
pub use crate::archive::fetch;
use crate::archive::store;
use crate::error::{BackupError, Error};

/// What a credentials Secret holds for reaching S3.
pub struct SecretStore {
    pub creds: store::Credentials,
    /// `AWS_ENDPOINT_URL`, for a URL that names no endpoint.
    pub endpoint: Option<String>,
    /// `AWS_REGION`, for a URL that names no region.
    pub region: Option<String>,
    /// `AWS_CA_BUNDLE`: the PEM of CAs to trust beside the system's roots (checked).
    pub ca_bundle: Option<String>,
}

/// Credentials of a Secret's standard keys (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`) and the endpoint, region and CA bundle it may carry. A CA bundle that
/// holds no usable certificate is refused here, naming the Secret.
pub async fn secret_credentials(
    client: &kube::Client,
    ns: &str,
    secret: &str,
) -> Result<SecretStore, Error> {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client.clone(), ns);
    let s = api
        .get_opt(secret)
        .await
        .map_err(|e| Error::kube("get", "Secret", ns, secret, e))?
        .ok_or_else(|| {
            BackupError::Usage(format!(
                "Secret {ns}/{secret} does not exist; create it with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            ))
        })?;
    let data = s.data.unwrap_or_default();
    let get = |k: &str| {
        data.get(k)
            .map(|v| String::from_utf8_lossy(&v.0).trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let (Some(id), Some(key)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) else {
        return Err(BackupError::Usage(format!(
            "Secret {ns}/{secret} lacks AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY"
        ))
        .into());
    };
    let ca_bundle = get(store::CA_BUNDLE);
    if let Some(pem) = &ca_bundle {
        store::check_pem(pem.as_bytes()).map_err(|why| {
            BackupError::Usage(format!(
                "Secret {ns}/{secret}, key {}: {why}; put the PEM of the CA that signed the S3 server's certificate there",
                store::CA_BUNDLE
            ))
        })?;
    }
    Ok(SecretStore {
        creds: store::Credentials {
            access_key_id: id,
            secret_access_key: key,
            session_token: get("AWS_SESSION_TOKEN"),
        },
        endpoint: get("AWS_ENDPOINT_URL"),
        region: get("AWS_REGION"),
        ca_bundle,
    })
}

/// The backup key in the Secret `k` of `ns` (`archive::crypt`). Refused with what to do when the
/// Secret or its key is missing or holds no key; the key itself never appears in a message.
pub async fn secret_key(
    client: &kube::Client,
    ns: &str,
    k: &crate::archive::crypt::KeySecret,
) -> Result<crate::archive::crypt::Key, Error> {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client.clone(), ns);
    let make = format!(
        "create it with `kubectl -n {ns} create secret generic {} --from-literal={}=$(openssl rand -hex 32)`",
        k.name, k.key
    );
    let s = api
        .get_opt(&k.name)
        .await
        .map_err(|e| Error::kube("get", "Secret", ns, &k.name, e))?
        .ok_or_else(|| {
            BackupError::Key(format!(
                "the encryption key Secret {ns}/{} does not exist; {make} (keep a copy: without it no backup encrypted with it can be restored)",
                k.name
            ))
        })?;
    let data = s.data.unwrap_or_default();
    let bytes = data.get(&k.key).ok_or_else(|| {
        BackupError::Key(format!(
            "Secret {ns}/{} has no key {:?} (it has: {}); name another with NAME/KEY, or {make}",
            k.name,
            k.key,
            data.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })?;
    crate::archive::crypt::Key::parse(&bytes.0).map_err(|why| {
        BackupError::Key(format!("Secret {ns}/{}, key {:?}: {why}", k.name, k.key)).into()
    })
}

/// EtcdBackup records of `cluster`, newest first.
pub async fn records(
    client: &kube::Client,
    ns: &str,
    cluster: &str,
) -> Result<Vec<crate::api::EtcdBackup>, Error> {
    let api: kube::Api<crate::api::EtcdBackup> = kube::Api::namespaced(client.clone(), ns);
    let mut list = api
        .list(&kube::api::ListParams::default().labels(&label::selector(cluster)))
        .await
        .map_err(|e| Error::kube("list", "EtcdBackup", ns, cluster, e))?
        .items;
    list.sort_by_key(|b| std::cmp::Reverse(b.metadata.creation_timestamp.clone().map(|t| t.0)));
    Ok(list)
}

/// Opens a location with a Secret's credentials (and the endpoint/region it carries, when the URL
/// names none) or, without a Secret, the standard AWS chain; a pvc:// location through an agent
/// pod of `tools_image` (close the store when done). The CLI verbs and the schedule share it;
/// `access` refuses what the operator is not allowed (`Context::store_access`; the CLI's is
/// `Access::ANY`).
pub async fn open_store(
    client: &kube::Client,
    ns: &str,
    loc: &store::Location,
    secret: Option<&str>,
    tools_image: &str,
    access: &store::Access,
) -> Result<store::Store, Error> {
    if matches!(loc, store::Location::Pvc { .. }) {
        return pvc::open(client, ns, loc, tools_image).await;
    }
    let (creds, loc) = match secret {
        Some(secret) => {
            let found = secret_credentials(client, ns, secret).await?;
            let mut loc = loc.clone();
            if let store::Location::S3(s3) = &mut loc {
                s3.endpoint = s3.endpoint.clone().or(found.endpoint);
                s3.region = s3.region.clone().or(found.region);
                s3.ca_bundle = found.ca_bundle;
            }
            (Some(found.creds), loc)
        }
        None => (None, loc.clone()),
    };
    access
        .check(&loc, creds.is_some())
        .map_err(BackupError::from)?;
    Ok(store::Store::open(&loc, creds)
        .await
        .map_err(BackupError::from)?)
}
