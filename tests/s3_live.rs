#![cfg(feature = "live")]
//! The backup store against a real S3 server: SeaweedFS started by `tests/cluster/s3.sh up`, which
//! checks SigV4 signatures. Its settings come from the environment (`. /tmp/tb/s3.env`:
//! AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, KE_S3_BUCKET); a test
//! fails, never skips, when they are missing. Every test writes under its own key prefix.
//!
//! Run: `. /tmp/tb/s3.env && cargo test --features live --test s3_live`
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

#[path = "common/proxy.rs"]
mod proxy;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kubectl_etcd::archive::codec::{self, Compression, Sha256Reader, SnapshotVerifier};
use kubectl_etcd::archive::store::{Credentials, Location, PART_SIZE, Store, StoreError};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};

struct Env {
    endpoint: String,
    access_key_id: String,
    secret_access_key: String,
    bucket: String,
}

fn env() -> Env {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!(
                "{name} is not set: start S3 with `tests/cluster/s3.sh up` and `. /tmp/tb/s3.env`"
            )
        })
    };
    var("AWS_REGION");
    Env {
        endpoint: var("AWS_ENDPOINT_URL"),
        access_key_id: var("AWS_ACCESS_KEY_ID"),
        secret_access_key: var("AWS_SECRET_ACCESS_KEY"),
        bucket: var("KE_S3_BUCKET"),
    }
}

/// A location of its own for each test: `s3://BUCKET/live/<pid>-<name>`.
fn location(name: &str) -> Location {
    let e = env();
    Location::parse(&format!(
        "s3://{}/live/{}-{name}",
        e.bucket,
        std::process::id()
    ))
    .unwrap()
}

async fn open(loc: &Location) -> Store {
    Store::open(loc, None).await.unwrap()
}

/// The SDK directly, to look behind the store's back (ETags, multipart uploads).
async fn raw_client() -> aws_sdk_s3::Client {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .load()
        .await;
    let conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// Deterministic pseudo-random bytes, generated as they are read (nothing held in memory).
struct Noise {
    left: u64,
    state: u64,
}

fn noise(len: u64, seed: u64) -> Noise {
    Noise {
        left: len,
        state: seed | 1,
    }
}

impl AsyncRead for Noise {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let n = (buf.remaining() as u64).min(self.left).min(64 * 1024) as usize;
        let mut chunk = Vec::with_capacity(n);
        while chunk.len() < n {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            chunk.extend_from_slice(&self.state.to_le_bytes()[..(n - chunk.len()).min(8)]);
        }
        buf.put_slice(&chunk);
        self.left -= n as u64;
        std::task::Poll::Ready(Ok(()))
    }
}

/// Yields `ok` bytes and then an error, like an etcd snapshot stream cut off half-way.
struct BreaksAfter(Noise);

impl AsyncRead for BreaksAfter {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.0.left == 0 {
            return std::task::Poll::Ready(Err(std::io::Error::other(
                "etcd snapshot stream broke",
            )));
        }
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

async fn sha_of(mut r: impl AsyncRead + Unpin) -> (u64, String) {
    let mut h = Sha256Reader::new(&mut r);
    tokio::io::copy(&mut h, &mut tokio::io::sink())
        .await
        .unwrap();
    h.finish()
}

#[tokio::test]
async fn a_40_mib_stream_goes_up_in_parts_and_comes_back_with_the_same_sha256() {
    let loc = location("big");
    let store = open(&loc).await;
    let size = 40 * 1024 * 1024;
    let (want_len, want_sha) = sha_of(noise(size, 42)).await;
    let seen = Mutex::new(Vec::new());
    let started = Instant::now();
    let stored = store
        .put("big.bin", noise(size, 42), |n| seen.lock().unwrap().push(n))
        .await
        .unwrap();
    eprintln!("40 MiB put in {:?}", started.elapsed());
    assert_eq!(
        (stored.bytes, stored.sha256_hex.as_str()),
        (want_len, want_sha.as_str())
    );
    let seen = seen.into_inner().unwrap();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "progress not increasing: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&size));
    assert_eq!(
        seen.len() as u64,
        size / PART_SIZE as u64,
        "one progress report per part"
    );

    // Multipart: S3's ETag of a multipart object ends with "-<parts>".
    let e = env();
    let full_key = format!("live/{}-big/big.bin", std::process::id());
    let head = raw_client()
        .await
        .head_object()
        .bucket(&e.bucket)
        .key(&full_key)
        .send()
        .await
        .unwrap();
    let etag = head
        .e_tag()
        .unwrap_or_default()
        .trim_matches('"')
        .to_string();
    assert!(
        etag.ends_with("-5"),
        "not a 5-part multipart upload: ETag {etag}"
    );

    let (reader, len) = store.get("big.bin").await.unwrap();
    assert_eq!(len, Some(size));
    assert_eq!(sha_of(reader).await, (want_len, want_sha));
    store.delete("big.bin").await.unwrap();
}

#[tokio::test]
async fn objects_list_head_and_delete() {
    let store = open(&location("list")).await;
    for (key, len) in [("demo/b.db", 10u64), ("demo/a.db", 2000), ("other/c.db", 1)] {
        store.put(key, noise(len, len), |_| {}).await.unwrap();
    }
    let listed = store.list("demo/").await.unwrap();
    let keys: Vec<(&str, u64)> = listed.iter().map(|o| (o.key.as_str(), o.size)).collect();
    assert_eq!(keys, [("demo/a.db", 2000), ("demo/b.db", 10)]);
    assert!(listed.iter().all(|o| o.last_modified.is_some()));
    assert_eq!(store.list("").await.unwrap().len(), 3);

    let head = store.head("demo/a.db").await.unwrap().unwrap();
    assert_eq!((head.key.as_str(), head.size), ("demo/a.db", 2000));
    assert_eq!(store.head("demo/nope.db").await.unwrap(), None);

    store.delete("demo/a.db").await.unwrap();
    store.delete("demo/a.db").await.unwrap();
    assert_eq!(store.head("demo/a.db").await.unwrap(), None);
    let err = store.get("demo/a.db").await.err().unwrap();
    assert!(
        matches!(&err, StoreError::NotFound(url) if url.ends_with("-list/demo/a.db")),
        "{err:?}"
    );
    for key in ["demo/b.db", "other/c.db"] {
        store.delete(key).await.unwrap();
    }
    assert!(store.list("").await.unwrap().is_empty());
}

#[tokio::test]
async fn listing_pages_through_more_than_a_thousand_objects() {
    let store = open(&location("many")).await;
    let keys: Vec<String> = (0..1010).map(|i| format!("k{i:05}")).collect();
    futures::future::try_join_all(
        keys.iter()
            .map(|k| async { store.put(k, &b"x"[..], |_| {}).await }),
    )
    .await
    .unwrap();
    let listed = store.list("").await.unwrap();
    assert_eq!(
        listed.len(),
        1010,
        "ListObjectsV2 returns at most 1000 per page"
    );
    assert_eq!(
        listed.iter().map(|o| o.key.clone()).collect::<Vec<_>>(),
        keys
    );
    futures::future::try_join_all(keys.iter().map(|k| store.delete(k)))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_wrong_secret_is_a_credentials_error_that_shows_no_secret() {
    let e = env();
    let creds = Credentials {
        access_key_id: e.access_key_id.clone(),
        secret_access_key: "wrong-secret-hunter2".into(),
        session_token: None,
    };
    let store = Store::open(&location("creds"), Some(creds)).await.unwrap();
    let err = store.list("").await.unwrap_err();
    assert!(matches!(err, StoreError::Credentials { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&e.bucket) && text.contains("AWS_SECRET_ACCESS_KEY"),
        "{text}"
    );
    assert!(
        !text.contains("hunter2") && !format!("{err:?}").contains("hunter2"),
        "{text}"
    );
    assert!(!err.is_transient());
    let err = store.put("x.db", &b"x"[..], |_| {}).await.unwrap_err();
    assert!(matches!(err, StoreError::Credentials { .. }), "{err:?}");
    // The right secret, from the environment, appears nowhere either.
    assert!(!format!("{err} {err:?}").contains(&e.secret_access_key));
}

#[tokio::test]
async fn a_missing_bucket_is_named_with_the_fix() {
    let loc = Location::parse("s3://kubectl-etcd-no-such-bucket/x").unwrap();
    let store = open(&loc).await;
    let err = store.check().await.unwrap_err();
    assert!(matches!(err, StoreError::NoSuchBucket { .. }), "{err:?}");
    assert!(!err.is_transient());
    let err = store.list("").await.unwrap_err();
    assert!(matches!(err, StoreError::NoSuchBucket { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("bucket kubectl-etcd-no-such-bucket does not exist at http://"),
        "{err}"
    );
    let err = store.put("a.db", &b"x"[..], |_| {}).await.unwrap_err();
    assert!(matches!(err, StoreError::NoSuchBucket { .. }), "{err:?}");
    let err = store.head("a.db").await.unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchBucket { .. }),
        "head: {err:?}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_quickly_and_names_it() {
    let e = env();
    let loc = Location::parse(&format!("s3://{}/x?endpoint=http://127.0.0.1:1", e.bucket)).unwrap();
    let store = open(&loc).await;
    let started = Instant::now();
    let err = store.check().await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(err.is_transient());
    assert!(err.to_string().contains("http://127.0.0.1:1"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = store.put("x.db", &b"x"[..], |_| {}).await.unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
}

#[tokio::test]
async fn the_node_ip_endpoint_for_pods_serves_the_same_bucket() {
    let e = env();
    let pod_endpoint = std::env::var("KE_S3_POD_ENDPOINT").unwrap_or_else(|_| {
        panic!("KE_S3_POD_ENDPOINT is not set: `tests/cluster/s3.sh up` writes it to /tmp/tb/s3.env once the testbed network is up")
    });
    let loc = Location::parse(&format!(
        "s3://{}/live/{}-pod?endpoint={pod_endpoint}",
        e.bucket,
        std::process::id()
    ))
    .unwrap();
    let store = open(&loc).await;
    store.check().await.unwrap();
    let stored = store
        .put("x.db", noise(PART_SIZE as u64 + 1, 3), |_| {})
        .await
        .unwrap();
    // The same object through the loopback endpoint.
    let direct = open(&location("pod")).await;
    let (reader, _) = direct.get("x.db").await.unwrap();
    assert_eq!(sha_of(reader).await, (stored.bytes, stored.sha256_hex));
    store.delete("x.db").await.unwrap();
}

#[tokio::test]
async fn an_upload_whose_body_breaks_half_way_leaves_no_parts_and_no_object() {
    let e = env();
    let store = open(&location("broken")).await;
    let err = store
        .put("broken.db", BreaksAfter(noise(20 * 1024 * 1024, 1)), |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("reading the data to store at s3://"),
        "{err}"
    );

    let full_key = format!("live/{}-broken/broken.db", std::process::id());
    let uploads = raw_client()
        .await
        .list_multipart_uploads()
        .bucket(&e.bucket)
        .prefix(&full_key)
        .send()
        .await
        .unwrap();
    assert!(
        uploads.uploads().is_empty(),
        "multipart uploads left behind: {:?}",
        uploads.uploads()
    );
    assert_eq!(store.head("broken.db").await.unwrap(), None);
}

/// A fake snapshot shaped like etcd's: 4 KiB pages and the sha256 trailer.
fn fake_snapshot(pages: usize) -> Vec<u8> {
    let mut db: Vec<u8> = (0..pages * 4096).map(|i| ((i / 64) % 253) as u8).collect();
    let sum = ring::digest::digest(&ring::digest::SHA256, &db);
    db.extend_from_slice(sum.as_ref());
    db
}

async fn round_trip_snapshot(store: &Store, key_base: &str) {
    let snap = fake_snapshot(3000); // 12 MiB: multipart for none, one request for the compressed
    for c in Compression::ALL {
        let key = format!("{key_base}{}", c.suffix());
        let stored = store
            .put(&key, codec::compress(c, &snap[..]), |_| {})
            .await
            .unwrap();
        let (reader, size) = store.get(&key).await.unwrap();
        assert_eq!(size, Some(stored.bytes), "{c}");
        let mut stored_sha = Sha256Reader::new(reader);
        let mut back = Vec::new();
        let mut verifier = SnapshotVerifier::new(codec::decompress(
            Compression::from_key(&key),
            &mut stored_sha,
        ));
        verifier.read_to_end(&mut back).await.unwrap();
        assert!(verifier.verified(), "{c}");
        assert_eq!(back, snap, "{c}");
        drop(verifier);
        assert_eq!(
            stored_sha.finish(),
            (stored.bytes, stored.sha256_hex.clone()),
            "{c}"
        );
        store.delete(&key).await.unwrap();
    }
}

#[tokio::test]
async fn compressed_snapshots_round_trip_through_s3_and_verify() {
    let store = open(&location("snap")).await;
    round_trip_snapshot(&store, "demo-r1.db").await;
}

#[tokio::test]
async fn compressed_snapshots_round_trip_through_a_file_location() {
    let dir = tempfile::tempdir().unwrap();
    let loc = Location::parse(&format!("file://{}/nested/dir", dir.path().display())).unwrap();
    let store = open(&loc).await;
    round_trip_snapshot(&store, "demo-r1.db").await;
    assert!(store.list("").await.unwrap().is_empty());
}

#[tokio::test]
async fn an_explicit_endpoint_in_the_url_wins_over_the_environment() {
    let e = env();
    let loc = Location::parse(&format!(
        "s3://{}/live/{}-explicit?endpoint={}&region=us-east-1",
        e.bucket,
        std::process::id(),
        e.endpoint
    ))
    .unwrap();
    let store = open(&loc).await;
    store.put("x.db", &b"hello"[..], |_| {}).await.unwrap();
    assert_eq!(store.head("x.db").await.unwrap().unwrap().size, 5);
    store.delete("x.db").await.unwrap();
}

/// Yields its bytes and then never again (neither data nor EOF), like a stalled snapshot stream.
struct StallsAfter(Noise);

impl AsyncRead for StallsAfter {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.0.left == 0 {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

#[tokio::test]
async fn a_cancelled_upload_is_aborted_in_the_background() {
    let e = env();
    let store = open(&location("cancelled")).await;
    let client = raw_client().await;
    let full_key = format!("live/{}-cancelled/cancelled.db", std::process::id());
    let uploads = || async {
        client
            .list_multipart_uploads()
            .bucket(&e.bucket)
            .prefix(&full_key)
            .send()
            .await
            .unwrap()
            .uploads()
            .len()
    };
    // Two parts' worth and a stall: the first part is uploaded, then the put waits forever.
    let put = store.put(
        "cancelled.db",
        StallsAfter(noise(2 * PART_SIZE as u64, 5)),
        |_| {},
    );
    let mut put = Box::pin(put);
    let started = Instant::now();
    loop {
        tokio::select! {
            r = &mut put => panic!("the put ended: {r:?}"),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        if uploads().await == 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the upload never started"
        );
    }
    drop(put); // cancel, as Ctrl-C or an aborted task would
    let started = Instant::now();
    while uploads().await != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the multipart upload was left behind"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.head("cancelled.db").await.unwrap(), None);
}

#[tokio::test]
async fn a_connection_dropped_in_the_middle_of_a_part_is_retried_and_the_object_is_whole() {
    let e = env();
    let upstream = e.endpoint.trim_start_matches("http://").to_string();
    let (proxy, cuts) =
        proxy::cutting_proxy("127.0.0.1:0", upstream, proxy::Cut::Requests(12 << 20)).await;
    let loc = Location::parse(&format!(
        "s3://{}/live/{}-flaky?endpoint=http://{proxy}",
        e.bucket,
        std::process::id()
    ))
    .unwrap();
    let store = open(&loc).await;
    let size = 3 * PART_SIZE as u64;
    let want = sha_of(noise(size, 9)).await;
    let stored = store.put("flaky.db", noise(size, 9), |_| {}).await.unwrap();
    assert_eq!(
        cuts.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the proxy never cut"
    );
    assert_eq!((stored.bytes, stored.sha256_hex.clone()), want);
    let (reader, _) = open(&location("flaky"))
        .await
        .get("flaky.db")
        .await
        .unwrap();
    assert_eq!(sha_of(reader).await, want);
    store.delete("flaky.db").await.unwrap();
}

/// The location `name` of this test run, reached through `proxy`.
fn through(proxy: std::net::SocketAddr, name: &str) -> Location {
    Location::parse(&format!(
        "s3://{}/live/{}-{name}?endpoint=http://{proxy}",
        env().bucket,
        std::process::id()
    ))
    .unwrap()
}

#[tokio::test]
async fn a_download_cut_midway_goes_on_from_where_it_stopped_and_is_whole() {
    let upstream = env().endpoint.trim_start_matches("http://").to_string();
    let (proxy, cuts) =
        proxy::cutting_proxy("127.0.0.1:0", upstream, proxy::Cut::Answers(5 << 20)).await;
    let direct = open(&location("cutdown")).await;
    let size = 3 * PART_SIZE as u64;
    let want = sha_of(noise(size, 11)).await;
    direct.put("cut.db", noise(size, 11), |_| {}).await.unwrap();
    let (reader, len) = open(&through(proxy, "cutdown"))
        .await
        .get("cut.db")
        .await
        .unwrap();
    assert_eq!(len, Some(size));
    assert_eq!(
        sha_of(reader).await,
        want,
        "the bytes joined across the cut"
    );
    assert_eq!(
        cuts.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the proxy never cut"
    );
    direct.delete("cut.db").await.unwrap();
}

#[tokio::test]
async fn a_store_refusing_downloads_for_a_while_is_waited_out_by_the_restore_pods_fetch() {
    let upstream = env().endpoint.trim_start_matches("http://").to_string();
    // The SDK tries a request three times: the first fetch fails whole, the second gets it.
    let (proxy, refused) = proxy::cutting_proxy("127.0.0.1:0", upstream, proxy::Cut::Gets(3)).await;
    let direct = open(&location("patient")).await;
    let snap = fake_snapshot(64);
    let stored = direct.put("p.db", &snap[..], |_| {}).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("restore").join("snapshot.db");
    let v = kubectl_etcd::archive::fetch::fetch_to_file_patiently(
        &open(&through(proxy, "patient")).await,
        "p.db",
        None,
        Some(&stored.sha256_hex),
        &to,
        None,
    )
    .await
    .unwrap();
    assert_eq!(refused.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(v.sha256, stored.sha256_hex);
    assert_eq!(std::fs::read(&to).unwrap(), snap);
    direct.delete("p.db").await.unwrap();
}

#[tokio::test]
async fn an_object_replaced_while_its_download_was_cut_is_refused_not_joined() {
    let upstream = env().endpoint.trim_start_matches("http://").to_string();
    let (proxy, cuts) =
        proxy::cutting_proxy("127.0.0.1:0", upstream, proxy::Cut::Answers(5 << 20)).await;
    let direct = open(&location("replaced")).await;
    let size = 3 * PART_SIZE as u64;
    direct.put("r.db", noise(size, 12), |_| {}).await.unwrap();
    let (mut reader, _) = open(&through(proxy, "replaced"))
        .await
        .get("r.db")
        .await
        .unwrap();
    let mut first = vec![0u8; 64 * 1024];
    reader.read_exact(&mut first).await.unwrap();
    // Replaced (other bytes: `noise` seeds are made odd) before the reader reaches the cut, so
    // before it asks for the rest.
    direct.put("r.db", noise(size, 14), |_| {}).await.unwrap();
    let err = tokio::io::copy(&mut reader, &mut tokio::io::sink())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(cuts.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        err.contains("broke off at byte")
            && err.contains("cannot go on")
            && err.contains("replaced while it was read"),
        "{err}"
    );
    direct.delete("r.db").await.unwrap();
}

#[tokio::test]
async fn a_crashed_takers_unfinished_upload_is_aborted_by_its_prefix_and_others_stay() {
    let e = env();
    let loc = location("abandoned");
    let store = open(&loc).await;
    let s3 = raw_client().await;
    let base = format!("live/{}-abandoned", std::process::id());
    // What a taker killed mid-upload leaves: a multipart upload with a part, never completed.
    let start = |key: String| {
        let s3 = s3.clone();
        let bucket = e.bucket.clone();
        async move {
            let id = s3
                .create_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await
                .unwrap()
                .upload_id()
                .unwrap()
                .to_string();
            s3.upload_part()
                .bucket(&bucket)
                .key(&key)
                .upload_id(&id)
                .part_number(1)
                .body(vec![7u8; 5 * 1024 * 1024].into())
                .send()
                .await
                .unwrap();
        }
    };
    start(format!("{base}/ns-demo-20261201T100000.123Z-r42.db.zst")).await;
    start(format!("{base}/ns-demo-20261201T110000.456Z-r43.db.zst")).await;
    let uploads = |prefix: String| {
        let s3 = s3.clone();
        let bucket = e.bucket.clone();
        async move {
            s3.list_multipart_uploads()
                .bucket(&bucket)
                .prefix(&prefix)
                .send()
                .await
                .unwrap()
                .uploads()
                .iter()
                .filter_map(|u| u.key().map(str::to_string))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(uploads(base.clone()).await.len(), 2);

    let aborted = store
        .abort_uploads("ns-demo-20261201T100000.")
        .await
        .unwrap();
    assert_eq!(aborted, 1);
    assert_eq!(
        uploads(base.clone()).await,
        vec![format!("{base}/ns-demo-20261201T110000.456Z-r43.db.zst")],
        "only the upload of that prefix goes"
    );
    assert_eq!(store.abort_uploads("").await.unwrap(), 1);
    assert!(uploads(base).await.is_empty());
}

#[tokio::test]
async fn sse_s3_uploads_single_and_multipart_are_accepted_and_read_back() {
    use kubectl_etcd::archive::store::Sse;
    let loc = location("sse");
    let store = open(&loc).await.with_sse(Some(Sse::Aes256)).unwrap();
    // One request, and a multipart upload (the SSE header goes on the create).
    for (key, len) in [("small.db", 1000u64), ("big.db", PART_SIZE as u64 + 1000)] {
        let stored = store.put(key, noise(len, 7), |_| {}).await.unwrap();
        let (r, _) = store.get(key).await.unwrap();
        assert_eq!(sha_of(r).await, (len, stored.sha256_hex), "{key}");
        let head = raw_client()
            .await
            .head_object()
            .bucket(&env().bucket)
            .key(format!("{}/{key}", s3_prefix(&loc)))
            .send()
            .await
            .unwrap();
        // SeaweedFS honours SSE-S3 and says so, as AWS does.
        assert_eq!(
            head.server_side_encryption(),
            Some(&aws_sdk_s3::types::ServerSideEncryption::Aes256),
            "{key}"
        );
        store.delete(key).await.unwrap();
    }
}

fn s3_prefix(loc: &Location) -> String {
    match loc {
        Location::S3(s3) => s3.prefix.clone(),
        other => panic!("{other} is not s3://"),
    }
}

/// The TLS front of the test S3 server (`tests/cluster/s3.sh`), whose certificate a private CA
/// signed: refused without that CA, naming AWS_CA_BUNDLE; served with it; refused with another CA.
#[tokio::test]
async fn a_server_of_a_private_ca_is_trusted_only_with_that_ca_in_the_bundle() {
    let e = env();
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: `tests/cluster/s3.sh up` writes it to /tmp/tb/s3.env")
        })
    };
    let (endpoint, ca_file) = (var("KE_S3_TLS_ENDPOINT"), var("KE_S3_TLS_CA"));
    let ca = std::fs::read_to_string(&ca_file).unwrap();
    let at = |bundle: Option<String>| {
        let mut loc = Location::parse(&format!(
            "s3://{}/live/{}-private-ca?endpoint={endpoint}",
            e.bucket,
            std::process::id()
        ))
        .unwrap();
        if let Location::S3(s3) = &mut loc {
            s3.ca_bundle = bundle;
        }
        loc
    };

    let store = open(&at(None)).await;
    let err = store.check().await.unwrap_err();
    assert!(matches!(err, StoreError::Untrusted { .. }), "{err:?}");
    assert!(
        !err.is_transient(),
        "a certificate refused now is refused again"
    );
    let text = err.to_string();
    assert!(
        text.contains(&endpoint)
            && text.contains("UnknownIssuer")
            && text.contains("AWS_CA_BUNDLE"),
        "{text}"
    );

    // Another CA than the one that signed the server's certificate: still refused.
    let other = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap()
        .pem();
    let err = open(&at(Some(other))).await.check().await.unwrap_err();
    assert!(matches!(err, StoreError::Untrusted { .. }), "{err:?}");

    // Not a certificate at all: refused when the store is opened, before any request.
    let Err(err) = Store::open(&at(Some("hunter2".into())), None).await else {
        panic!("a bundle without a certificate was taken");
    };
    assert!(matches!(err, StoreError::CaBundle(_)), "{err:?}");
    assert!(err.to_string().contains("no PEM certificate"), "{err}");

    // The CA that signed it (after the system's roots, as a Secret would give it): served.
    let store = open(&at(Some(ca))).await;
    store.check().await.unwrap();
    let stored = store
        .put("x.db", noise(PART_SIZE as u64 + 7, 11), |_| {})
        .await
        .unwrap();
    let (reader, _) = store.get("x.db").await.unwrap();
    assert_eq!(sha_of(reader).await, (stored.bytes, stored.sha256_hex));
    store.delete("x.db").await.unwrap();
}
