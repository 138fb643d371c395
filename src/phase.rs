//! Where the time goes: a span per phase (API calls, port-forwards, etcd RPCs, engine passes,
//! waits), whose duration is logged when it ends, under the `phase` target. The CLI's `-v` turns
//! them on (`RUST_LOG=phase=debug` for `operate`); off, a phase costs one check of the filter.
//!
//! ```text
//! DEBUG create{cluster=demo}:pass:observe:dial{member=0}: phase ended phase="port_forward" ms=118.4
//! ```
//! `tests/bench.sh` sums them per phase name for its report.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};
use tracing::Instrument;

/// The target every phase span and its end event use (`RUST_LOG=phase=debug`).
pub const TARGET: &str = "phase";

/// Runs `fut` inside `span` (made with [`span!`](crate::phase!)) and, when the span is enabled,
/// logs how long it took, in milliseconds, as it ends.
pub fn timed<F: Future>(span: tracing::Span, fut: F) -> impl Future<Output = F::Output> {
    // On the heap from the call on: the caller's future then holds a pointer, not `fut` (nested
    // phases would otherwise nest their futures inline, which overflows a thread's stack in
    // debug builds).
    let fut = Box::pin(fut);
    async move {
        if span.is_disabled() {
            return fut.await;
        }
        let started = Instant::now();
        let out = fut.instrument(span.clone()).await;
        let ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        let name = span.metadata().map_or("", |m| m.name());
        tracing::debug!(target: "phase", parent: &span, phase = name, ms, "phase ended");
        out
    }
}

/// Logs `ms` as the duration of the phase `name` under `parent` (a time measured otherwise than
/// by a span around a future: a stage of a pipeline, a container's run).
pub fn ended(parent: &tracing::Span, name: &str, took: Duration) {
    let ms = (took.as_secs_f64() * 10_000.0).round() / 10.0;
    tracing::debug!(target: "phase", parent: parent, phase = name, ms, "phase ended");
}

/// Time spent inside a reader's `poll_read`, summed; off (`Clock::off`) it costs one branch per
/// read. In a pull pipeline (etcd stream → compression → encryption, read by the upload) each
/// stage's reads include those of the stage it reads from: `own_times` tells them apart.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<AtomicU64>>);

impl Clock {
    /// A clock that runs when `span` is enabled.
    pub fn for_span(span: &tracing::Span) -> Clock {
        match span.is_disabled() {
            true => Clock(None),
            false => Clock(Some(Arc::default())),
        }
    }

    /// Whether it measures anything.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// The time summed so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.as_ref().map_or(0, |n| n.load(Ordering::Relaxed)))
    }

    /// `inner`, its reads timed on this clock.
    pub fn time<R>(&self, inner: R) -> Busy<R> {
        Busy {
            inner,
            clock: self.clone(),
        }
    }
}

/// A reader whose time inside `poll_read` is summed on its `Clock`.
pub struct Busy<R> {
    inner: R,
    clock: Clock,
}

impl<R: AsyncRead + Unpin> AsyncRead for Busy<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let Some(sum) = self.clock.0.clone() else {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        };
        let started = Instant::now();
        let out = Pin::new(&mut self.inner).poll_read(cx, buf);
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        sum.fetch_add(nanos, Ordering::Relaxed);
        out
    }
}

/// Pure: the own time of each stage of a pull pipeline, from the time summed inside each
/// stage's reads (`busy`, the source first: each includes the ones before it) and the wall time
/// of the whole: a stage's busy time less its source's, then the wall time less the last
/// stage's (the time the consumer spent on its own, e.g. an upload not overlapped by reading).
pub fn own_times(busy: &[Duration], wall: Duration) -> Vec<Duration> {
    let mut before = Duration::ZERO;
    let mut own: Vec<Duration> = busy
        .iter()
        .map(|b| {
            let o = b.saturating_sub(before);
            before = before.max(*b);
            o
        })
        .collect();
    own.push(wall.saturating_sub(before));
    own
}

/// A phase span: `phase!("port_forward", pod = %pod)`, at debug level under the `phase` target.
#[macro_export]
macro_rules! phase {
    ($name:literal $(, $($field:tt)*)?) => {
        tracing::debug_span!(target: "phase", $name $(, $($field)*)?)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn each_stage_owns_its_reads_less_its_sources_and_the_consumer_the_rest_of_the_wall_time() {
        // etcd 300 ms inside compression's 700 ms inside encryption's 800 ms; 1 s in all.
        assert_eq!(
            own_times(&[ms(300), ms(700), ms(800)], ms(1000)),
            [ms(300), ms(400), ms(100), ms(200)]
        );
        assert_eq!(
            own_times(&[], ms(5)),
            [ms(5)],
            "no stage: all the consumer's"
        );
        // Clocks read a moment apart never give a negative time.
        assert_eq!(own_times(&[ms(10), ms(9)], ms(8)), [ms(10), ms(0), ms(0)]);
    }

    #[tokio::test]
    async fn a_clock_sums_the_time_inside_reads_and_an_off_one_reads_the_same_bytes() {
        use tokio::io::AsyncReadExt;
        let mut on = Clock(Some(Arc::default())).time(&b"snapshot"[..]);
        let mut off = Clock::default().time(&b"snapshot"[..]);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        on.read_to_end(&mut a).await.unwrap();
        off.read_to_end(&mut b).await.unwrap();
        assert_eq!(
            (a.as_slice(), b.as_slice()),
            (&b"snapshot"[..], &b"snapshot"[..])
        );
        assert!(on.clock.total() > Duration::ZERO, "reads took some time");
        assert!(!off.clock.is_on() && off.clock.total() == Duration::ZERO);
    }
}
