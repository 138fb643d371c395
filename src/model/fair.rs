//! Fair sharing of the operator's slots between namespaces (issue 42 item 5). Pure: no client;
//! the clock is passed in.
//!
//! A slot is a pass or a scheduled backup in flight. At most `per_namespace` run in one namespace
//! and `total` in all. What waits is kept per namespace, first come first served within one;
//! between namespaces the free slots go round-robin (the namespace served last goes to the back
//! of the line), so a namespace with 50 due clusters delays another namespace's one by at most
//! one slot's turn:
//!
//! ```text
//!  ask(ns, key) ─▶ running already ─▶ Go
//!               ─▶ queued at the back of ns's line (or kept in its place) ─▶
//!                    among the next ones the free slots go to (`lineup`) ─▶ Go (runs)
//!                    else ─▶ Wait(why): ns full, all full, or its turn not come
//!  done(ns, key) ─▶ the slot frees ─▶ the lineup (whom to wake)
//! ```
//!
//! A waiter that stops asking (its cluster deleted, its backup no longer due) leaves the line
//! after `ttl` without asking again, so it never holds its namespace's turn for good.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// How many slots run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// In one namespace.
    pub per_namespace: usize,
    /// In all namespaces.
    pub total: usize,
}

impl Bounds {
    /// Scheduled backups: a tenant's second schedule never waits for its first; each backup
    /// streams through a buffer of its own (a few MiB) and a member's snapshot, and eight keep the
    /// operator within its memory limit (`operate --max-backups-per-namespace`, `--max-backups`).
    pub const BACKUPS: Bounds = Bounds {
        per_namespace: 2,
        total: 8,
    };
    /// Reconcile passes: four of a namespace at once (`operate --max-passes-per-namespace`), and
    /// no bound in all: a bound in all would make every cluster wait behind the long steps in its
    /// slots (dials to unreachable members, pre-upgrade snapshots, defragmentations), while a
    /// bound per namespace makes a tenant wait only behind its own.
    pub const PASSES: Bounds = Bounds {
        per_namespace: 4,
        total: usize::MAX,
    };
}

/// Which bound holds a waiter back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Its namespace runs `per_namespace` already.
    Namespace,
    /// All namespaces run `total` already.
    Total,
}

/// The answer to `ask`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Turn {
    /// It runs: call `done` when it ends.
    Go,
    /// It waits in line: `running` slots are taken of `bound` (`full`: which bound, `None`: a
    /// slot is free and another's turn comes first), and about `ahead` waiters go first (those
    /// before it in its namespace's line, and one of each namespace whose turn comes before).
    Wait {
        full: Option<Full>,
        running: usize,
        bound: usize,
        ahead: usize,
    },
}

/// One namespace's slots and line.
#[derive(Debug)]
struct Namespace<K> {
    running: Vec<K>,
    /// First come first served, each with when it last asked.
    line: VecDeque<(K, Instant)>,
}

impl<K> Default for Namespace<K> {
    fn default() -> Self {
        Namespace {
            running: Vec::new(),
            line: VecDeque::new(),
        }
    }
}

/// The slots and the lines of every namespace.
#[derive(Debug)]
pub struct Fair<K> {
    bounds: Bounds,
    /// A waiter that has not asked for this long leaves the line (`None`: it stays until
    /// `forget`).
    ttl: Option<Duration>,
    namespaces: BTreeMap<String, Namespace<K>>,
    /// Namespaces with waiters, in the order their turns come.
    ring: VecDeque<String>,
}

impl<K: Clone + Eq> Fair<K> {
    pub fn new(bounds: Bounds, ttl: Option<Duration>) -> Fair<K> {
        Fair {
            bounds,
            ttl,
            namespaces: BTreeMap::new(),
            ring: VecDeque::new(),
        }
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// `key` of namespace `ns` asks for a slot at `now`: it runs, or waits in line (joining it
    /// at the back the first time; keeping its place after).
    pub fn ask(&mut self, ns: &str, key: &K, now: Instant) -> Turn {
        self.expire(now);
        let space = self.namespaces.entry(ns.to_owned()).or_default();
        if space.running.contains(key) {
            return Turn::Go;
        }
        match space.line.iter_mut().find(|(k, _)| k == key) {
            Some((_, asked)) => *asked = now,
            None => space.line.push_back((key.clone(), now)),
        }
        if !self.ring.iter().any(|n| n == ns) {
            self.ring.push_back(ns.to_owned());
        }
        if self.lineup().iter().any(|(n, k)| n == ns && k == key) {
            self.start(ns, key);
            return Turn::Go;
        }
        self.wait(ns, key)
    }

    /// `key`'s slot frees; returns who goes next (at most as many as there are free slots),
    /// the ones to wake.
    pub fn done(&mut self, ns: &str, key: &K, now: Instant) -> Vec<(String, K)> {
        if let Some(space) = self.namespaces.get_mut(ns) {
            space.running.retain(|k| k != key);
        }
        self.expire(now);
        self.tidy(ns);
        self.lineup()
    }

    /// `key` leaves the line without running (it gave up waiting); returns who goes next.
    pub fn forget(&mut self, ns: &str, key: &K) -> Vec<(String, K)> {
        if let Some(space) = self.namespaces.get_mut(ns) {
            space.line.retain(|(k, _)| k != key);
        }
        self.tidy(ns);
        self.lineup()
    }

    /// Waiters in namespace `ns`'s line.
    pub fn waiting(&self, ns: &str) -> usize {
        self.namespaces.get(ns).map_or(0, |s| s.line.len())
    }

    /// Slots running in namespace `ns`.
    pub fn running(&self, ns: &str) -> usize {
        self.namespaces.get(ns).map_or(0, |s| s.running.len())
    }

    /// Every namespace with a slot or a line, with its waiters.
    pub fn waiting_by_namespace(&self) -> BTreeMap<String, usize> {
        self.namespaces
            .iter()
            .map(|(ns, s)| (ns.clone(), s.line.len()))
            .collect()
    }

    fn running_total(&self) -> usize {
        self.namespaces.values().map(|s| s.running.len()).sum()
    }

    /// Who the free slots go to now, in order: round-robin over the namespaces with room, in
    /// their turns' order, each namespace's line first come first served.
    fn lineup(&self) -> Vec<(String, K)> {
        let mut free = self.bounds.total.saturating_sub(self.running_total());
        let mut lines: Vec<_> = self
            .ring
            .iter()
            .filter_map(|ns| {
                let s = self.namespaces.get(ns)?;
                let room = self.bounds.per_namespace.saturating_sub(s.running.len());
                Some((ns, room, s.line.iter()))
            })
            .collect();
        let mut next = Vec::new();
        while free > 0 {
            let before = next.len();
            for (ns, room, line) in &mut lines {
                if free == 0 || *room == 0 {
                    continue;
                }
                if let Some((k, _)) = line.next() {
                    next.push(((*ns).clone(), k.clone()));
                    *room -= 1;
                    free -= 1;
                }
            }
            if next.len() == before {
                break;
            }
        }
        next
    }

    /// Moves `key` from its line to its namespace's slots; its namespace's turn goes to the
    /// back of the ring.
    fn start(&mut self, ns: &str, key: &K) {
        if let Some(space) = self.namespaces.get_mut(ns) {
            space.line.retain(|(k, _)| k != key);
            space.running.push(key.clone());
        }
        self.ring.retain(|n| n != ns);
        if self.waiting(ns) > 0 {
            self.ring.push_back(ns.to_owned());
        }
    }

    /// Why `key` waits.
    fn wait(&self, ns: &str, key: &K) -> Turn {
        let space = &self.namespaces[ns];
        let in_line = space.line.iter().position(|(k, _)| k == key).unwrap_or(0);
        let (full, running, bound) = if space.running.len() >= self.bounds.per_namespace {
            (
                Some(Full::Namespace),
                space.running.len(),
                self.bounds.per_namespace,
            )
        } else if self.running_total() >= self.bounds.total {
            (Some(Full::Total), self.running_total(), self.bounds.total)
        } else {
            (None, self.running_total(), self.bounds.total)
        };
        let turns_before = self.ring.iter().position(|n| n == ns).unwrap_or(0);
        Turn::Wait {
            full,
            running,
            bound,
            ahead: in_line + turns_before,
        }
    }

    /// Drops the waiters that stopped asking `ttl` ago.
    fn expire(&mut self, now: Instant) {
        let Some(ttl) = self.ttl else { return };
        let names: Vec<String> = self.namespaces.keys().cloned().collect();
        for ns in names {
            if let Some(space) = self.namespaces.get_mut(&ns) {
                space
                    .line
                    .retain(|(_, asked)| now.saturating_duration_since(*asked) < ttl);
            }
            self.tidy(&ns);
        }
    }

    /// Forgets a namespace with nothing running and nobody waiting, and takes a namespace
    /// nobody waits in off the ring.
    fn tidy(&mut self, ns: &str) {
        let (running, waiting) = (self.running(ns), self.waiting(ns));
        if waiting == 0 {
            self.ring.retain(|n| n != ns);
        }
        if running == 0 && waiting == 0 {
            self.namespaces.remove(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fair(per_namespace: usize, total: usize) -> Fair<String> {
        Fair::new(
            Bounds {
                per_namespace,
                total,
            },
            Some(Duration::from_secs(60)),
        )
    }

    fn ask(f: &mut Fair<String>, ns: &str, key: &str, now: Instant) -> bool {
        f.ask(ns, &key.to_string(), now) == Turn::Go
    }

    fn names(next: &[(String, String)]) -> Vec<String> {
        next.iter().map(|(ns, k)| format!("{ns}/{k}")).collect()
    }

    #[test]
    fn a_namespace_runs_up_to_its_bound_and_the_rest_waits_first_come_first_served() {
        let (mut f, now) = (fair(2, 8), Instant::now());
        assert!(ask(&mut f, "a", "1", now));
        assert!(ask(&mut f, "a", "2", now));
        assert_eq!(
            f.ask("a", &"3".into(), now),
            Turn::Wait {
                full: Some(Full::Namespace),
                running: 2,
                bound: 2,
                ahead: 0
            }
        );
        assert!(!ask(&mut f, "a", "4", now));
        assert_eq!(f.waiting("a"), 2);
        // 4 asks again: it keeps its place behind 3.
        assert!(!ask(&mut f, "a", "4", now));
        assert_eq!(names(&f.done("a", &"1".into(), now)), ["a/3"]);
        assert!(!ask(&mut f, "a", "4", now), "3's turn, not 4's");
        assert!(ask(&mut f, "a", "3", now));
        assert_eq!(f.running("a"), 2);
    }

    #[test]
    fn one_namespace_flooding_does_not_delay_another_namespaces_one_beyond_one_turn() {
        // Bound 1 in all: every slot is a turn. Namespace a has 50 waiting, b one.
        let (mut f, now) = (fair(1, 1), Instant::now());
        assert!(ask(&mut f, "a", "0", now));
        for i in 1..=50 {
            assert!(!ask(&mut f, "a", &i.to_string(), now));
        }
        assert_eq!(
            f.ask("b", &"only".into(), now),
            Turn::Wait {
                full: Some(Full::Total),
                running: 1,
                bound: 1,
                ahead: 1
            },
            "a's first waiter goes first, then b"
        );
        // a's 0 ends: a/1's turn (a's line was first), then b's.
        assert_eq!(names(&f.done("a", &"0".into(), now)), ["a/1"]);
        assert!(!ask(&mut f, "b", "only", now));
        assert!(ask(&mut f, "a", "1", now));
        assert_eq!(names(&f.done("a", &"1".into(), now)), ["b/only"]);
        assert!(!ask(&mut f, "a", "2", now), "b's turn now");
        assert!(ask(&mut f, "b", "only", now));
    }

    #[test]
    fn a_namespace_arriving_while_one_floods_runs_at_once_when_its_own_bound_has_room() {
        // Bound 1 per namespace, 8 in all: a's 50 wait for a's slot, never for b's.
        let (mut f, now) = (fair(1, 8), Instant::now());
        assert!(ask(&mut f, "a", "0", now));
        for i in 1..=50 {
            assert!(!ask(&mut f, "a", &i.to_string(), now));
        }
        assert!(ask(&mut f, "b", "only", now));
        assert_eq!(f.waiting("a"), 50);
        assert_eq!(f.waiting("b"), 0);
    }

    #[test]
    fn many_namespaces_take_the_free_slots_in_turn() {
        let (mut f, now) = (fair(2, 3), Instant::now());
        for k in ["1", "2"] {
            assert!(ask(&mut f, "a", k, now));
        }
        assert!(ask(&mut f, "b", "1", now));
        // All full. Then, in order, a, b, c and d queue up, a with three.
        for (ns, k) in [
            ("a", "3"),
            ("a", "4"),
            ("a", "5"),
            ("b", "2"),
            ("c", "1"),
            ("d", "1"),
        ] {
            assert!(!ask(&mut f, ns, k, now), "{ns}/{k}");
        }
        // a's slot frees: a is full no more and first in the ring.
        assert_eq!(names(&f.done("a", &"1".into(), now)), ["a/3"]);
        assert!(ask(&mut f, "a", "3", now));
        // b's frees: b's turn, c's, d's come before a's again.
        assert_eq!(names(&f.done("b", &"1".into(), now)), ["b/2"]);
        assert!(ask(&mut f, "b", "2", now));
        let next = names(&f.done("a", &"2".into(), now));
        assert_eq!(next, ["c/1"], "c's turn before a's second");
        assert!(!ask(&mut f, "a", "4", now));
        assert!(ask(&mut f, "c", "1", now));
        assert_eq!(names(&f.done("a", &"3".into(), now)), ["d/1"]);
        assert!(ask(&mut f, "d", "1", now));
        assert_eq!(names(&f.done("b", &"2".into(), now)), ["a/4"]);
    }

    #[test]
    fn several_free_slots_go_one_per_namespace_per_round() {
        let (mut f, now) = (fair(4, 4), Instant::now());
        for k in ["1", "2", "3", "4"] {
            assert!(ask(&mut f, "a", k, now));
        }
        for k in ["5", "6", "7"] {
            assert!(!ask(&mut f, "a", k, now));
        }
        assert!(!ask(&mut f, "b", "1", now));
        f.done("a", &"1".into(), now);
        let next = names(&f.done("a", &"2".into(), now));
        assert_eq!(next, ["a/5", "b/1"], "one each, a's line first");
        // b asks first: it is in the lineup, it goes.
        assert!(ask(&mut f, "b", "1", now));
        assert!(ask(&mut f, "a", "5", now));
        assert!(!ask(&mut f, "a", "6", now));
    }

    #[test]
    fn a_freed_slot_goes_to_the_next_in_line_not_to_whoever_asks_first() {
        let (mut f, now) = (fair(1, 1), Instant::now());
        assert!(ask(&mut f, "a", "1", now));
        assert!(!ask(&mut f, "b", "1", now));
        f.done("a", &"1".into(), now);
        assert!(!ask(&mut f, "c", "1", now), "b waited first");
        assert!(ask(&mut f, "b", "1", now));
    }

    #[test]
    fn an_emptied_namespace_is_forgotten_and_its_turn_passes() {
        let (mut f, now) = (fair(1, 1), Instant::now());
        assert!(ask(&mut f, "a", "1", now));
        assert!(!ask(&mut f, "b", "1", now));
        assert!(!ask(&mut f, "c", "1", now));
        // b's waiter gives up (its cluster went): c is next.
        assert!(
            f.forget("b", &"1".into()).is_empty(),
            "the slot is a's still"
        );
        assert_eq!(names(&f.done("a", &"1".into(), now)), ["c/1"]);
        assert!(ask(&mut f, "c", "1", now));
        f.done("c", &"1".into(), now);
        assert!(
            f.waiting_by_namespace().is_empty(),
            "nothing is left of a, b, c"
        );
        assert!(f.ring.is_empty());
    }

    #[test]
    fn a_waiter_that_stops_asking_leaves_the_line_after_its_ttl() {
        let (mut f, t0) = (fair(1, 1), Instant::now());
        assert!(ask(&mut f, "a", "1", t0));
        assert!(!ask(&mut f, "b", "gone", t0));
        assert!(!ask(&mut f, "c", "1", t0 + Duration::from_secs(30)));
        // b's cluster never asks again; a's slot frees after b's ttl.
        let later = t0 + Duration::from_secs(61);
        assert!(!ask(&mut f, "c", "1", later), "a still runs");
        assert_eq!(names(&f.done("a", &"1".into(), later)), ["c/1"]);
        assert_eq!(f.waiting("b"), 0);
    }

    #[test]
    fn asking_again_while_running_is_still_go_and_takes_no_second_slot() {
        let (mut f, now) = (fair(1, 2), Instant::now());
        assert!(ask(&mut f, "a", "1", now));
        assert!(ask(&mut f, "a", "1", now));
        assert_eq!(f.running("a"), 1);
        assert!(ask(&mut f, "b", "1", now), "one slot in all is still free");
    }

    #[test]
    fn bound_one_runs_one_at_a_time_and_every_waiter_gets_its_turn() {
        let (mut f, now) = (fair(1, 1), Instant::now());
        let all = [("a", "1"), ("a", "2"), ("b", "1"), ("a", "3"), ("c", "1")];
        let mut ran = Vec::new();
        for (ns, k) in all {
            if ask(&mut f, ns, k, now) {
                ran.push(format!("{ns}/{k}"));
            }
        }
        assert_eq!(ran, ["a/1"]);
        let mut last = ("a".to_string(), "1".to_string());
        while let Some((ns, k)) = f.done(&last.0, &last.1, now).into_iter().next() {
            assert_eq!(f.running_total(), 0);
            assert!(f.ask(&ns, &k, now) == Turn::Go);
            ran.push(format!("{ns}/{k}"));
            last = (ns, k);
        }
        // a/2 queued before b/1; then one turn per namespace.
        assert_eq!(ran, ["a/1", "a/2", "b/1", "c/1", "a/3"], "round-robin");
    }

    #[test]
    fn a_waiter_with_room_in_both_bounds_but_behind_others_says_how_many_go_first() {
        let (mut f, now) = (fair(2, 2), Instant::now());
        assert!(ask(&mut f, "a", "1", now));
        assert!(ask(&mut f, "a", "2", now));
        assert!(!ask(&mut f, "b", "1", now));
        assert!(!ask(&mut f, "c", "1", now));
        f.done("a", &"1".into(), now);
        // One slot free: b's. c has room in both bounds, and waits behind b.
        assert_eq!(
            f.ask("c", &"1".into(), now),
            Turn::Wait {
                full: None,
                running: 1,
                bound: 2,
                ahead: 1
            }
        );
    }
}
