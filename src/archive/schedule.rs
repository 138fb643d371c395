//! When scheduled backups run: standard 5-field cron expressions (minute hour day-of-month month
//! day-of-week), evaluated in UTC. Pure: the caller passes the time to count from.
//!
//! Parsing is `croner`'s (maintained, POSIX/Vixie semantics: day-of-month and day-of-week match
//! when either does, names like `mon`/`jan`, ranges, steps, `@daily`-style aliases), on its `jiff`
//! backend, with seconds and years disallowed so a 6-field Quartz pattern is refused rather than
//! silently read with a different meaning.

use std::fmt;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed cron schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    expr: String,
    cron: Cron,
}

/// Parses a 5-field cron expression (UTC), e.g. "0 */6 * * *" or "@daily".
pub fn parse(expr: &str) -> Result<Schedule, String> {
    let trimmed = expr.trim();
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    let fields = trimmed.split_whitespace().count();
    if !trimmed.starts_with('@') && fields != 5 {
        return Err(format!(
            "invalid schedule {expr:?}: a cron expression has 5 fields (minute hour day-of-month month day-of-week, UTC), e.g. \"0 3 * * *\" for 03:00 UTC daily; this one has {fields}"
        ));
    }
    let cron = parser.parse(trimmed).map_err(|e| {
        format!(
            "invalid schedule {expr:?}: {e}; use 5 cron fields (minute hour day-of-month month day-of-week, UTC), e.g. \"0 3 * * *\" for 03:00 UTC daily"
        )
    })?;
    Ok(Schedule {
        expr: trimmed.to_string(),
        cron,
    })
}

impl Schedule {
    /// The first run strictly after `t`, or None if the expression never fires again
    /// (e.g. "0 0 30 2 *").
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let from = t.to_zoned(TimeZone::UTC);
        self.cron
            .find_next_occurrence(&from, false)
            .ok()
            .map(|z| z.timestamp())
    }

    /// The last run at or before `t`, if any: what a scheduler that was down should have run.
    pub fn last_at_or_before(&self, t: Timestamp) -> Option<Timestamp> {
        let from = t.to_zoned(TimeZone::UTC);
        self.cron
            .find_previous_occurrence(&from, true)
            .ok()
            .map(|z| z.timestamp())
    }

    /// The expression as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.expr
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.expr == other.expr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn next(expr: &str, after: &str) -> String {
        parse(expr)
            .unwrap()
            .next_after(at(after))
            .unwrap()
            .to_string()
    }

    #[test]
    fn common_schedules_fire_when_expected_in_utc() {
        assert_eq!(
            next("* * * * *", "2026-12-01T10:00:30Z"),
            "2026-12-01T10:01:00Z"
        );
        assert_eq!(
            next("0 3 * * *", "2026-12-01T10:00:00Z"),
            "2026-12-02T03:00:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2026-12-01T10:14:59Z"),
            "2026-12-01T10:15:00Z"
        );
        assert_eq!(
            next("0 */6 * * *", "2026-12-01T12:00:00Z"),
            "2026-12-01T18:00:00Z"
        );
        assert_eq!(
            next("30 2 * * mon", "2026-12-01T00:00:00Z"),
            "2026-12-07T02:30:00Z"
        );
        assert_eq!(
            next("0 0 1 jan *", "2026-12-01T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("@hourly", "2026-12-01T10:59:59Z"),
            "2026-12-01T11:00:00Z"
        );
        assert_eq!(
            next("@daily", "2026-12-31T23:59:59Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
    }

    #[test]
    fn next_after_is_strictly_after_a_matching_instant() {
        assert_eq!(
            next("0 3 * * *", "2026-12-01T03:00:00Z"),
            "2026-12-02T03:00:00Z"
        );
        let s = parse("*/5 * * * *").unwrap();
        // Sub-second times still move to the next slot, never back to the same minute.
        assert_eq!(
            s.next_after(at("2026-12-01T10:05:00.5Z"))
                .unwrap()
                .to_string(),
            "2026-12-01T10:10:00Z"
        );
    }

    #[test]
    fn runs_follow_each_other() {
        let s = parse("0 */8 * * *").unwrap();
        let mut t = at("2026-12-01T01:00:00Z");
        let mut runs = Vec::new();
        for _ in 0..4 {
            t = s.next_after(t).unwrap();
            runs.push(t.to_string());
        }
        assert_eq!(
            runs,
            [
                "2026-12-01T08:00:00Z",
                "2026-12-01T16:00:00Z",
                "2026-12-02T00:00:00Z",
                "2026-12-02T08:00:00Z"
            ]
        );
        assert_eq!(
            s.last_at_or_before(at("2026-12-01T08:00:00Z"))
                .unwrap()
                .to_string(),
            "2026-12-01T08:00:00Z"
        );
        assert_eq!(
            s.last_at_or_before(at("2026-12-01T07:59:00Z"))
                .unwrap()
                .to_string(),
            "2026-12-01T00:00:00Z"
        );
    }

    #[test]
    fn day_of_month_and_day_of_week_match_either_like_vixie_cron() {
        // 13th of the month OR a Friday: Fri 2026-12-04 comes before the 13th.
        assert_eq!(
            next("0 0 13 * fri", "2026-12-01T00:00:00Z"),
            "2026-12-04T00:00:00Z"
        );
    }

    #[test]
    fn bad_expressions_are_refused_with_a_clear_message() {
        for bad in [
            "",
            "* * * *",
            "0 0 * * * *",
            "0 0 * * * 2026",
            "61 * * * *",
            "* 24 * * *",
            "hello world a b c",
            "*/0 * * * *",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("invalid schedule {bad:?}")),
                "{bad}: {err}"
            );
            assert!(err.contains("5") && err.contains("UTC"), "{bad}: {err}");
        }
        assert!(parse("0 0 * * * *").unwrap_err().contains("this one has 6"));
    }

    #[test]
    fn an_expression_that_never_fires_has_no_next_run() {
        let s = parse("0 0 30 2 *").unwrap();
        assert_eq!(s.next_after(at("2026-12-01T00:00:00Z")), None);
    }

    #[test]
    fn display_gives_the_expression_back() {
        assert_eq!(parse("  0 3 * * *  ").unwrap().to_string(), "0 3 * * *");
        assert_eq!(parse("0 3 * * *").unwrap(), parse("0 3 * * *").unwrap());
    }
}
