//! Names of stored backups and their records, pure: the object key a backup is stored under
//! (which sorts by time and carries the cluster and the revision), the time read back from such a
//! key (retention deletes only objects named so), and the `EtcdBackup` record's name.

use jiff::Timestamp;

use super::codec::Compression;

/// UTC time as it appears in object and record names: sorts as text.
/// Milliseconds included: two backups within one second get two objects.
fn stamp(t: Timestamp) -> String {
    t.strftime("%Y%m%dT%H%M%S%.3fZ").to_string()
}

/// `<namespace>-<cluster>-<UTC time>-r<revision>.db<suffix>[.enc]` (relative to the
/// destination's prefix): one cluster's objects sort by time and carry the cluster and the
/// revision; `.enc` marks one encrypted on the client (`archive::crypt`).
pub fn object_key(
    namespace: &str,
    cluster: &str,
    time: Timestamp,
    revision: i64,
    compression: Compression,
    encrypted: bool,
) -> String {
    format!(
        "{namespace}-{cluster}-{}-r{revision}.db{}{}",
        stamp(time),
        compression.suffix(),
        if encrypted { super::crypt::SUFFIX } else { "" }
    )
}

/// The start of the key `object_key` gives a backup started within the second of `time` (a
/// record's start time is stored to the second; the milliseconds and revision follow).
pub fn object_prefix(namespace: &str, cluster: &str, time: Timestamp) -> String {
    format!("{namespace}-{cluster}-{}.", time.strftime("%Y%m%dT%H%M%S"))
}

/// The time in a key `object_key` gave a backup of `namespace`/`cluster`, or None when `key` is
/// not such a name (another cluster's, or nothing this project wrote). Retention deletes only
/// objects named so. (`<namespace>-<cluster>` is not unique across namespaces: `a-b`/`c` and
/// `a`/`b-c` write the same names; only a destination shared by both would confuse them.)
pub fn object_time(namespace: &str, cluster: &str, key: &str) -> Option<Timestamp> {
    let rest = key.strip_prefix(&format!("{namespace}-{cluster}-"))?;
    // yyyymmddThhmmss.mmmZ
    let (stamp, rest) = (rest.get(..20)?, rest.get(20..)?);
    let shape_ok = stamp.char_indices().all(|(i, c)| match i {
        8 => c == 'T',
        15 => c == '.',
        19 => c == 'Z',
        _ => c.is_ascii_digit(),
    });
    if !shape_ok {
        return None;
    }
    let rest = rest.strip_prefix("-r")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let suffix = rest.get(digits..)?.strip_prefix(".db")?;
    let suffix = suffix.strip_suffix(super::crypt::SUFFIX).unwrap_or(suffix);
    let known = Compression::ALL.iter().any(|c| suffix == c.suffix());
    if digits == 0 || !known {
        return None;
    }
    let d = |r: std::ops::Range<usize>| &stamp[r];
    format!(
        "{}-{}-{}T{}:{}:{}.{}Z",
        d(0..4),
        d(4..6),
        d(6..8),
        d(9..11),
        d(11..13),
        d(13..15),
        d(16..19)
    )
    .parse()
    .ok()
}

/// The EtcdBackup's name: `<cluster>-<yyyymmddhhmmss>` (lowercase, DNS-safe).
pub fn record_name(cluster: &str, time: Timestamp) -> String {
    format!("{cluster}-{}", time.strftime("%Y%m%d%H%M%S"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_sort_by_time_and_carry_cluster_and_revision() {
        let t1: Timestamp = "2026-12-01T09:05:00Z".parse().unwrap();
        let t2: Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
        let a = object_key("ns", "demo", t1, 99, Compression::Zstd, false);
        let b = object_key("ns", "demo", t2, 7, Compression::None, false);
        assert_eq!(a, "ns-demo-20261201T090500.000Z-r99.db.zst");
        assert_eq!(b, "ns-demo-20261201T100000.000Z-r7.db");
        assert!(a < b);
        assert_eq!(
            object_key("ns", "demo", t1, 1, Compression::Gzip, false),
            "ns-demo-20261201T090500.000Z-r1.db.gz"
        );
        assert_eq!(
            object_key("ns", "demo", t1, 1, Compression::Zstd, true),
            "ns-demo-20261201T090500.000Z-r1.db.zst.enc"
        );
        assert_eq!(record_name("demo", t1), "demo-20261201090500");
        let later = t1 + jiff::SignedDuration::from_millis(250);
        assert!(
            object_key("ns", "demo", later, 5, Compression::Zstd, false)
                .starts_with(&object_prefix("ns", "demo", t1))
        );
        assert!(!b.starts_with(&object_prefix("ns", "demo", t1)));
    }

    #[test]
    fn object_names_read_back_their_time_and_nothing_else_passes_for_one() {
        let t: Timestamp = "2026-12-01T09:05:00.250Z".parse().unwrap();
        for c in Compression::ALL {
            for encrypted in [false, true] {
                let key = object_key("ns", "demo", t, 42, c, encrypted);
                assert_eq!(object_time("ns", "demo", &key), Some(t), "{key}");
            }
        }
        for other in [
            "ns-demo2-20261201T090500.250Z-r42.db.zst",
            "ns-dem-20261201T090500.250Z-r42.db.zst",
            "other-demo-20261201T090500.250Z-r42.db.zst",
            "ns-demo-20261201T090500.250Z-r42.db.zst.bak",
            "ns-demo-20261201T090500.250Z-r42.db.zst.enc.enc",
            "ns-demo-20261201T090500.250Z-r42.db.enc.zst",
            "ns-demo-20261201T090500.250Z-r.db",
            "ns-demo-20261201T090500Z-r42.db",
            "ns-demo-20261301T090500.250Z-r42.db",
            "ns-demo-20261201T090500.250Z-r42.db/x",
            "ns-demo-",
            "precious.db",
        ] {
            assert_eq!(object_time("ns", "demo", other), None, "{other}");
        }
    }
}
