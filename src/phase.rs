//! Where the time goes: a span per phase (API calls, port-forwards, etcd RPCs, engine passes,
//! waits), whose duration is logged when it ends, under the `phase` target. The CLI's `-v` turns
//! them on (`RUST_LOG=phase=debug` for `operate`); off, a phase costs one check of the filter.
//!
//! ```text
//! DEBUG create{cluster=demo}:pass:observe:dial{member=0}: phase ended phase="port_forward" ms=118.4
//! ```
//! `tests/bench.sh` sums them per phase name for its report.

use std::future::Future;
use std::time::Instant;

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

/// A phase span: `phase!("port_forward", pod = %pod)`, at debug level under the `phase` target.
#[macro_export]
macro_rules! phase {
    ($name:literal $(, $($field:tt)*)?) => {
        tracing::debug_span!(target: "phase", $name $(, $($field)*)?)
    };
}
