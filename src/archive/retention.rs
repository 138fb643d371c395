//! Which backups to delete. Pure: values in, names out; no clock (`now` is passed in), no client.
//!
//! The rules, in order:
//! 1. The newest successful backup is never deleted, whatever the policy says.
//! 2. Only successful backups count toward the keep rules: a run of failures never pushes a good
//!    backup out (retention deletes nothing *because* a backup failed).
//! 3. A successful backup is kept when any keep rule selects it: `keepLast` the N newest; `keepHourly`,
//!    `keepDaily`, `keepWeekly` the newest backup of each of the N most recent UTC hours / days / ISO
//!    weeks that have one. With no keep rule set, every backup is kept (only `maxAge` prunes).
//! 4. `maxAge` caps everything: a backup older than that is deleted even when a keep rule selects it
//!    (rule 1 still wins).
//! 5. A failed backup holds nothing to restore: the `FAILURES_KEPT` newest failures newer than
//!    the newest successful backup are kept (they tell why the schedule is failing; a schedule
//!    failing every minute for a day would otherwise leave 1 440 records, as a CronJob's
//!    `failedJobsHistoryLimit` prevents), every other failure is deleted once any rule is set (a
//!    keep rule or `maxAge`). A backup taken without a healthy quorum counts as a failed
//!    one here (the caller passes it as not `succeeded`): it never pushes a good backup out.
//! 6. A pinned backup (a restore names it) is never deleted, whatever the rules above say.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many backups to keep. Every field is optional; an empty policy keeps everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    /// Keep the N newest successful backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_last: Option<u32>,
    /// Keep the newest successful backup of each of the N most recent hours (UTC) that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_hourly: Option<u32>,
    /// Keep the newest successful backup of each of the N most recent days (UTC) that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_daily: Option<u32>,
    /// Keep the newest successful backup of each of the N most recent ISO weeks (UTC) that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_weekly: Option<u32>,
    /// Delete backups older than this, e.g. "30d", "12h", "2w", "1d12h" (units s, m, h, d, w).
    /// The newest successful backup is kept whatever its age.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text"
    )]
    #[schemars(with = "Option<String>", regex(pattern = r"^([0-9]+[smhdw])+$"))]
    pub max_age: Option<Duration>,
}

impl Retention {
    fn has_keep_rule(&self) -> bool {
        self.keep_last.is_some()
            || self.keep_hourly.is_some()
            || self.keep_daily.is_some()
            || self.keep_weekly.is_some()
    }

    fn is_empty(&self) -> bool {
        !self.has_keep_rule() && self.max_age.is_none()
    }
}

impl fmt::Display for Retention {
    /// One line for status and `--dry-run`, e.g. "keep last 7, daily 14, max age 30d".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (label, v) in [
            ("last", self.keep_last),
            ("hourly", self.keep_hourly),
            ("daily", self.keep_daily),
            ("weekly", self.keep_weekly),
        ] {
            if let Some(n) = v {
                parts.push(format!("{label} {n}"));
            }
        }
        let mut s = if parts.is_empty() {
            "keep all".to_string()
        } else {
            format!("keep {}", parts.join(", "))
        };
        if let Some(age) = self.max_age {
            s.push_str(&format!(", max age {}", format_duration(age)));
        }
        f.write_str(&s)
    }
}

/// Failed backups newer than the newest successful one that a retention policy keeps (rule 5).
pub const FAILURES_KEPT: usize = 3;

/// One backup as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    /// When the backup was taken (its start, or the time in its object name).
    pub time: Timestamp,
    /// A good backup: it succeeded, with a healthy quorum behind its member.
    pub succeeded: bool,
    /// Something still reads it (an EtcdCluster's `spec.restore.backupName`): never deleted.
    pub pinned: bool,
}

/// Names of the backups to delete, oldest first, each once.
pub fn to_delete(list: &[Candidate], policy: &Retention, now: Timestamp) -> Vec<String> {
    if policy.is_empty() {
        return Vec::new();
    }
    // Newest first; ties broken by name so the result does not depend on the input order.
    let mut sorted: Vec<&Candidate> = list.iter().collect();
    sorted.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.name.cmp(&a.name)));
    let successes: Vec<&Candidate> = sorted.iter().copied().filter(|c| c.succeeded).collect();
    let newest_success = successes.first().copied();

    let mut keep: HashSet<&str> = HashSet::new();
    if policy.has_keep_rule() {
        if let Some(n) = policy.keep_last {
            keep.extend(successes.iter().take(n as usize).map(|c| c.name.as_str()));
        }
        for (n, bucket) in [
            (policy.keep_hourly, Bucket::Hour),
            (policy.keep_daily, Bucket::Day),
            (policy.keep_weekly, Bucket::Week),
        ] {
            if let Some(n) = n {
                keep.extend(newest_per_bucket(&successes, bucket, n));
            }
        }
    } else {
        keep.extend(successes.iter().map(|c| c.name.as_str()));
    }
    // The newest failures newer than every success stay (rule 5).
    keep.extend(
        sorted
            .iter()
            .take_while(|c| !c.succeeded)
            .take(FAILURES_KEPT)
            .map(|c| c.name.as_str()),
    );
    if let Some(max_age) = policy.max_age {
        let too_old = |c: &Candidate| {
            now.duration_since(c.time)
                .try_into()
                .is_ok_and(|age: Duration| age > max_age)
        };
        keep.retain(|name| !sorted.iter().any(|c| c.name == *name && too_old(c)));
    }
    if let Some(newest) = newest_success {
        keep.insert(newest.name.as_str()); // rule 1 wins over everything
    }
    keep.extend(sorted.iter().filter(|c| c.pinned).map(|c| c.name.as_str())); // rule 6

    let mut seen = BTreeSet::new();
    sorted
        .iter()
        .rev()
        .filter(|c| !keep.contains(c.name.as_str()))
        .filter(|c| seen.insert(c.name.as_str()))
        .map(|c| c.name.clone())
        .collect()
}

#[derive(Clone, Copy)]
enum Bucket {
    Hour,
    Day,
    Week,
}

impl Bucket {
    /// The UTC hour, day or ISO week a time falls in, as a comparable key.
    fn of(self, t: Timestamp) -> (i32, i32, i32) {
        let dt = TimeZone::UTC.to_datetime(t);
        let date = dt.date();
        match self {
            Bucket::Hour => (
                i32::from(date.year()),
                i32::from(date.day_of_year()),
                i32::from(dt.hour()),
            ),
            Bucket::Day => (i32::from(date.year()), i32::from(date.day_of_year()), 0),
            Bucket::Week => {
                let w = date.iso_week_date();
                (i32::from(w.year()), i32::from(w.week()), 0)
            }
        }
    }
}

/// The newest candidate of each of the `n` newest buckets; `newest_first` is sorted newest first.
fn newest_per_bucket<'a>(newest_first: &[&'a Candidate], bucket: Bucket, n: u32) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    newest_first
        .iter()
        .filter(|c| seen.insert(bucket.of(c.time)))
        .take(n as usize)
        .map(|c| c.name.as_str())
        .collect()
}

/// The units `format_duration` writes, largest first (no weeks: "30d" reads better than "4w2d").
const UNITS: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// Parses "30d", "12h", "1d12h", "90m", "2w" with humantime, as the CLI's flags do. The CRD's
/// pattern admits only those forms (units s, m, h, d, w); humantime's longer spellings ("1h 30m",
/// "30days") parse too where no API server checks first. Whole seconds only.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = |why: String| {
        format!(
            "invalid duration {s:?} ({why}): use numbers with units s, m, h, d, w, e.g. \"30d\" or \"1d12h\""
        )
    };
    let d = humantime::parse_duration(s.trim()).map_err(|e| bad(e.to_string()))?;
    if d.subsec_nanos() != 0 {
        return Err(bad("not a whole number of seconds".into()));
    }
    Ok(d)
}

/// Text that `parse_duration` reads back as `d` (whole seconds), in days and smaller units. Not
/// humantime's formatter: its "30days" and "1day 12h" fail
/// the CRD's pattern, and this text is written back into specs.
pub fn format_duration(d: Duration) -> String {
    let mut left = d.as_secs();
    if left == 0 {
        return "0s".into();
    }
    let mut s = String::new();
    for (unit, secs) in UNITS {
        if left >= secs {
            s.push_str(&format!("{}{unit}", left / secs));
            left %= secs;
        }
    }
    s
}

/// serde for `Option<Duration>` as the text of `parse_duration`.
mod duration_text {
    use super::{format_duration, parse_duration};
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse_duration(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn ok(name: &str, time: &str) -> Candidate {
        Candidate {
            name: name.into(),
            time: at(time),
            succeeded: true,
            pinned: false,
        }
    }

    fn failed(name: &str, time: &str) -> Candidate {
        Candidate {
            succeeded: false,
            ..ok(name, time)
        }
    }

    fn policy(json: &str) -> Retention {
        serde_json::from_str(json).unwrap()
    }

    const NOW: &str = "2026-12-01T12:00:00Z";

    /// A backup every 6 hours for 20 days before NOW, all successful, named b000 (oldest) ...
    fn every_six_hours() -> Vec<Candidate> {
        (0..80)
            .map(|i| {
                let t = at(NOW) - jiff::SignedDuration::from_hours(6 * (80 - i));
                Candidate {
                    name: format!("b{i:03}"),
                    time: t,
                    succeeded: true,
                    pinned: false,
                }
            })
            .collect()
    }

    fn kept(list: &[Candidate], p: &Retention) -> Vec<String> {
        let gone = to_delete(list, p, at(NOW));
        list.iter()
            .map(|c| c.name.clone())
            .filter(|n| !gone.contains(n))
            .collect()
    }

    #[test]
    fn an_empty_policy_deletes_nothing() {
        assert!(to_delete(&every_six_hours(), &Retention::default(), at(NOW)).is_empty());
    }

    #[test]
    fn keep_last_keeps_the_newest_successes_and_deletes_oldest_first() {
        let list = vec![
            ok("a", "2026-11-30T00:00:00Z"),
            ok("b", "2026-11-30T01:00:00Z"),
            ok("c", "2026-11-30T02:00:00Z"),
            ok("d", "2026-11-30T03:00:00Z"),
        ];
        assert_eq!(
            to_delete(&list, &policy(r#"{"keepLast":2}"#), at(NOW)),
            ["a", "b"]
        );
    }

    #[test]
    fn failures_do_not_count_toward_keep_last() {
        let list = vec![
            ok("a", "2026-11-30T00:00:00Z"),
            ok("b", "2026-11-30T01:00:00Z"),
            failed("f1", "2026-11-30T02:00:00Z"),
            failed("f2", "2026-11-30T03:00:00Z"),
            failed("f3", "2026-11-30T04:00:00Z"),
        ];
        // The failing runs are newer than every success: all kept, and both successes too.
        assert!(to_delete(&list, &policy(r#"{"keepLast":2}"#), at(NOW)).is_empty());
    }

    #[test]
    fn a_long_run_of_failures_keeps_only_its_newest_few() {
        let mut list = vec![ok("a", "2026-11-30T00:00:00Z")];
        for m in 0..10 {
            list.push(failed(&format!("f{m}"), &format!("2026-11-30T01:0{m}:00Z")));
        }
        // The newest three failures say why; the seven before them and nothing else go.
        assert_eq!(
            to_delete(&list, &policy(r#"{"keepLast":2}"#), at(NOW)),
            ["f0", "f1", "f2", "f3", "f4", "f5", "f6"]
        );
        // Without a policy nothing is deleted, failures included.
        assert!(to_delete(&list, &Retention::default(), at(NOW)).is_empty());
    }

    #[test]
    fn failures_older_than_a_success_are_deleted_once_a_rule_is_set() {
        let list = vec![
            failed("f0", "2026-11-29T23:00:00Z"),
            ok("a", "2026-11-30T00:00:00Z"),
            failed("f1", "2026-11-30T01:00:00Z"),
            ok("b", "2026-11-30T02:00:00Z"),
            failed("f2", "2026-11-30T03:00:00Z"),
        ];
        assert_eq!(
            to_delete(&list, &policy(r#"{"keepLast":5}"#), at(NOW)),
            ["f0", "f1"]
        );
    }

    #[test]
    fn keep_zero_still_keeps_the_newest_success() {
        let list = vec![
            ok("a", "2026-11-30T00:00:00Z"),
            ok("b", "2026-11-30T01:00:00Z"),
            failed("f", "2026-11-30T02:00:00Z"),
        ];
        assert_eq!(
            to_delete(&list, &policy(r#"{"keepLast":0}"#), at(NOW)),
            ["a"]
        );
    }

    #[test]
    fn a_backup_a_restore_still_reads_is_never_deleted() {
        let mut read = ok("read", "2026-10-01T00:00:00Z");
        read.pinned = true;
        let list = vec![
            read,
            ok("a", "2026-11-30T00:00:00Z"),
            ok("b", "2026-11-30T01:00:00Z"),
        ];
        let p = policy(r#"{"keepLast": 1, "maxAge": "1d"}"#);
        assert_eq!(to_delete(&list, &p, at(NOW)), vec!["a"]);
    }

    #[test]
    fn max_age_deletes_old_backups_but_never_the_newest_success() {
        let list = vec![
            ok("old", "2026-10-01T00:00:00Z"),
            ok("newest-ok", "2026-10-02T00:00:00Z"),
            failed("recent-fail", "2026-11-30T00:00:00Z"),
            failed("ancient-fail", "2026-01-01T00:00:00Z"),
        ];
        assert_eq!(
            to_delete(&list, &policy(r#"{"maxAge":"30d"}"#), at(NOW)),
            ["ancient-fail", "old"]
        );
    }

    #[test]
    fn max_age_overrides_keep_rules() {
        let list = every_six_hours();
        let k = kept(&list, &policy(r#"{"keepLast":40,"maxAge":"2d"}"#));
        // 2 days at one backup per 6 h: the 8 newest (the one exactly 2 days old is not older).
        assert_eq!(k, (72..80).map(|i| format!("b{i:03}")).collect::<Vec<_>>());
    }

    #[test]
    fn keep_daily_keeps_the_newest_backup_of_each_utc_day() {
        let list = every_six_hours(); // times 18:00, 00:00, 06:00, 12:00 UTC
        let k = kept(&list, &policy(r#"{"keepDaily":3}"#));
        // NOW's day holds b078 (00:00) and b079 (06:00); the days before end with their 18:00 backups.
        assert_eq!(k, ["b073", "b077", "b079"]);
    }

    #[test]
    fn keep_hourly_buckets_by_utc_hour() {
        let list = vec![
            ok("h10a", "2026-12-01T10:05:00Z"),
            ok("h10b", "2026-12-01T10:55:00Z"),
            ok("h11a", "2026-12-01T11:01:00Z"),
            ok("h11b", "2026-12-01T11:30:00Z"),
            ok("h09", "2026-12-01T09:59:59Z"),
        ];
        assert_eq!(
            to_delete(&list, &policy(r#"{"keepHourly":2}"#), at(NOW)),
            ["h09", "h10a", "h11a"]
        );
    }

    #[test]
    fn keep_weekly_buckets_by_iso_week_across_the_year_end() {
        // 2026-12-28 (Mon) .. 2027-01-03 (Sun) is ISO week 2026-W53; 2027-01-04 starts 2027-W01.
        let list = vec![
            ok("w52", "2026-12-27T12:00:00Z"),
            ok("w53-mon", "2026-12-28T12:00:00Z"),
            ok("w53-sun", "2027-01-03T12:00:00Z"),
            ok("w01", "2027-01-04T12:00:00Z"),
        ];
        let gone = to_delete(
            &list,
            &policy(r#"{"keepWeekly":2}"#),
            at("2027-01-05T00:00:00Z"),
        );
        assert_eq!(gone, ["w52", "w53-mon"]);
    }

    #[test]
    fn keep_rules_combine_as_a_union() {
        let list = every_six_hours();
        let k = kept(
            &list,
            &policy(r#"{"keepLast":2,"keepDaily":2,"keepWeekly":2}"#),
        );
        // last 2: b078 b079; daily 2: b077 b079; weekly 2: NOW is Tue 2026-12-01 (week of
        // Mon 11-30), so this week's newest is b079 and last week's is Sun 11-29 18:00 = b073.
        assert_eq!(k, ["b073", "b077", "b078", "b079"]);
    }

    #[test]
    fn input_order_and_duplicate_names_do_not_change_the_answer() {
        let mut list = every_six_hours();
        let p = policy(r#"{"keepLast":3}"#);
        let want = to_delete(&list, &p, at(NOW));
        list.reverse();
        list.push(list[10].clone());
        let got = to_delete(&list, &p, at(NOW));
        assert_eq!(got, want);
    }

    #[test]
    fn durations_parse_and_print_back() {
        for (text, secs) in [
            ("30d", 30 * 86_400),
            ("12h", 43_200),
            ("1d12h", 129_600),
            ("2w", 1_209_600),
            ("90s", 90),
            ("0s", 0),
        ] {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_secs(secs),
                "{text}"
            );
            assert_eq!(
                parse_duration(&format_duration(Duration::from_secs(secs)))
                    .unwrap()
                    .as_secs(),
                secs
            );
        }
        assert_eq!(format_duration(Duration::from_secs(129_600)), "1d12h");
        assert_eq!(format_duration(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(format_duration(Duration::from_secs(3_661)), "1h1m1s");
        // humantime's longer spellings, for manifests no API server checked.
        assert_eq!(parse_duration(" 1d 12h ").unwrap().as_secs(), 129_600);
        assert_eq!(parse_duration("30days").unwrap().as_secs(), 30 * 86_400);
        assert_eq!(parse_duration("1.5h").unwrap().as_secs(), 5_400);
        for bad in [
            "",
            "30",
            "d",
            "3x",
            "-1d",
            "99999999999999999999w",
            "1500ms",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("units s, m, h, d, w"), "{bad}: {err}");
        }
    }

    #[test]
    fn retention_reads_and_writes_camel_case_with_text_durations() {
        let p = policy(r#"{"keepLast":7,"keepDaily":14,"maxAge":"30d"}"#);
        assert_eq!(p.keep_last, Some(7));
        assert_eq!(p.max_age, Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"keepLast":7,"keepDaily":14,"maxAge":"30d"}"#
        );
        assert_eq!(p.to_string(), "keep last 7, daily 14, max age 30d");
        assert_eq!(Retention::default().to_string(), "keep all");
        let err = serde_json::from_str::<Retention>(r#"{"maxAge":"soon"}"#).unwrap_err();
        assert!(err.to_string().contains("invalid duration"), "{err}");
    }

    #[test]
    fn the_schema_has_no_null_types_for_the_1_20_api_server() {
        // kube's CRD generator uses the OpenAPI v3 settings (optional fields become `nullable`).
        let schema = schemars::generate::SchemaSettings::openapi3()
            .into_generator()
            .into_root_schema_for::<Retention>();
        let text = serde_json::to_string(&schema).unwrap();
        assert!(!text.contains(r#""null""#), "{text}");
        let props = &serde_json::to_value(&schema).unwrap()["properties"];
        assert_eq!(props["maxAge"]["type"], "string", "{text}");
        assert!(props["keepLast"]["type"] == "integer", "{text}");
    }

    /// xorshift64*: a small deterministic PRNG, so failures reproduce from the printed seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn maybe(&mut self, n: u64) -> Option<u32> {
            (self.below(3) > 0).then(|| self.below(n) as u32)
        }
    }

    #[test]
    fn random_backup_sets_keep_the_newest_success_and_delete_each_name_once() {
        let now = at(NOW);
        for seed in 1..=2000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let n = rng.below(40) as usize;
            let list: Vec<Candidate> = (0..n)
                .map(|i| Candidate {
                    name: format!("s{seed}-{i}"),
                    // up to 60 days back, to the second
                    time: now - jiff::SignedDuration::from_secs(rng.below(60 * 86_400) as i64),
                    succeeded: rng.below(4) > 0,
                    pinned: rng.below(8) == 0,
                })
                .collect();
            let p = Retention {
                keep_last: rng.maybe(6),
                keep_hourly: rng.maybe(6),
                keep_daily: rng.maybe(10),
                keep_weekly: rng.maybe(5),
                max_age: (rng.below(2) == 0).then(|| Duration::from_secs(rng.below(40 * 86_400))),
            };
            let gone = to_delete(&list, &p, now);
            let ctx = format!("seed {seed}: policy {p:?}, deleted {gone:?}");

            let unique: HashSet<&String> = gone.iter().collect();
            assert_eq!(unique.len(), gone.len(), "deleted twice; {ctx}");
            assert!(
                gone.iter().all(|g| list.iter().any(|c| &c.name == g)),
                "unknown name; {ctx}"
            );
            let newest_ok = list
                .iter()
                .filter(|c| c.succeeded)
                .max_by_key(|c| (c.time, c.name.clone()));
            if let Some(newest) = newest_ok {
                assert!(
                    !gone.contains(&newest.name),
                    "newest success deleted; {ctx}"
                );
            }
            if p.is_empty() {
                assert!(gone.is_empty(), "{ctx}");
            }
            assert!(
                !list.iter().any(|c| c.pinned && gone.contains(&c.name)),
                "a pinned backup deleted; {ctx}"
            );
            // With keepLast alone, exactly the successes beyond the newest N go (at least one stays).
            if let (Some(k), None, None, None, None) = (
                p.keep_last,
                p.keep_hourly,
                p.keep_daily,
                p.keep_weekly,
                p.max_age,
            ) {
                let mut oks: Vec<&Candidate> = list.iter().filter(|c| c.succeeded).collect();
                oks.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.name.cmp(&a.name)));
                let beyond = oks
                    .iter()
                    .skip((k as usize).max(1))
                    .filter(|c| !c.pinned)
                    .count();
                let ok_gone = gone
                    .iter()
                    .filter(|g| list.iter().any(|c| &c.name == *g && c.succeeded))
                    .count();
                assert_eq!(ok_gone, beyond, "{ctx}");
            }
            // Applying the policy again to what is left deletes nothing more (it is a fixed point).
            let left: Vec<Candidate> = list
                .iter()
                .filter(|c| !gone.contains(&c.name))
                .cloned()
                .collect();
            let again = to_delete(&left, &p, now);
            assert!(
                again.is_empty(),
                "not a fixed point: then deletes {again:?}; {ctx}"
            );
            // The newest `FAILURES_KEPT` failures newer than the newest success are never
            // deleted unless too old; older failures than those go.
            let mut recent: Vec<&Candidate> = list
                .iter()
                .filter(|c| !c.succeeded && newest_ok.is_none_or(|n| c.time > n.time))
                .collect();
            recent.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.name.cmp(&a.name)));
            for c in recent.iter().skip(FAILURES_KEPT).filter(|c| !c.pinned) {
                assert!(
                    p.is_empty() || gone.contains(&c.name),
                    "failure {} kept; {ctx}",
                    c.name
                );
            }
            for c in recent.iter().take(FAILURES_KEPT) {
                let old = p
                    .max_age
                    .is_some_and(|m| (now.duration_since(c.time)).as_secs() as u64 > m.as_secs());
                if !old {
                    assert!(
                        !gone.contains(&c.name),
                        "recent failure {} deleted; {ctx}",
                        c.name
                    );
                }
            }
        }
    }
}
