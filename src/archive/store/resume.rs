//! A download that outlives its connection: when an object's bytes stop before its end (the
//! connection cut, reset, or timed out midway), the reader asks the store for the rest from the
//! byte it reached — of the same version of the object only — and reads on, a few times in a row
//! at most. Whoever reads it sees one whole stream or an error; a restore of a large backup no
//! longer fails (and starts over) on one dropped connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::io::{AsyncRead, ReadBuf};

use super::StoreError;

/// What `Store::get` hands out.
pub(super) type Body = Box<dyn AsyncRead + Unpin + Send>;

/// Asks the store for the object's bytes from an offset on (of the version first read).
pub(super) type Reopen = Box<dyn Fn(u64) -> BoxFuture<'static, Result<Body, StoreError>> + Send>;

/// Cuts in a row, without a byte read in between, before the download is given up.
pub(super) const MAX_RESUMES: u32 = 5;

/// The wait before the first resume; doubled for each further one in a row (0.25 s … 4 s).
const FIRST_WAIT: Duration = Duration::from_millis(250);

pub(super) struct Resuming {
    /// The object's URL, for messages.
    what: String,
    size: u64,
    offset: u64,
    /// Cuts since the last byte read.
    cuts: u32,
    first_wait: Duration,
    reopen: Reopen,
    state: State,
}

enum State {
    Reading(Body),
    Reopening(BoxFuture<'static, Result<Body, StoreError>>),
}

impl Resuming {
    /// Reads `size` bytes of `what` from `body`, resuming with `reopen` where it breaks off.
    pub(super) fn new(what: String, size: u64, body: Body, reopen: Reopen) -> Resuming {
        Resuming {
            what,
            size,
            offset: 0,
            cuts: 0,
            first_wait: FIRST_WAIT,
            reopen,
            state: State::Reading(body),
        }
    }

    #[cfg(test)]
    fn waiting(mut self, first_wait: Duration) -> Resuming {
        self.first_wait = first_wait;
        self
    }

    /// The bytes stopped at `self.offset` for `why`: ask for the rest after a pause, or give up.
    fn resume(&mut self, why: &dyn std::fmt::Display) -> io::Result<()> {
        if self.cuts >= MAX_RESUMES {
            return Err(io::Error::other(format!(
                "the download of {} broke off at byte {} of {} {} times in a row: {why}",
                self.what,
                self.offset,
                self.size,
                self.cuts + 1
            )));
        }
        let wait = self.first_wait * 2u32.pow(self.cuts);
        self.cuts += 1;
        tracing::warn!(
            object = self.what,
            at = self.offset,
            size = self.size,
            attempt = self.cuts,
            error = %why,
            "the download broke off; asking for the rest in {wait:?}"
        );
        let rest = (self.reopen)(self.offset);
        self.state = State::Reopening(
            async move {
                tokio::time::sleep(wait).await;
                rest.await
            }
            .boxed(),
        );
        Ok(())
    }
}

impl AsyncRead for Resuming {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Reading(body) => {
                    let before = buf.filled().len();
                    let read = match Pin::new(body).poll_read(cx, buf) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(r) => r,
                    };
                    let n = (buf.filled().len() - before) as u64;
                    let cut = match read {
                        Ok(()) if n > 0 => {
                            this.offset += n;
                            this.cuts = 0;
                            return Poll::Ready(Ok(()));
                        }
                        Ok(()) if this.offset >= this.size => return Poll::Ready(Ok(())),
                        Ok(()) => format!("the connection ended at byte {}", this.offset),
                        Err(e) => e.to_string(),
                    };
                    if let Err(e) = this.resume(&cut) {
                        return Poll::Ready(Err(e));
                    }
                }
                State::Reopening(rest) => match rest.poll_unpin(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(body)) => this.state = State::Reading(body),
                    Poll::Ready(Err(e)) if e.is_transient() => {
                        if let Err(e) = this.resume(&e) {
                            return Poll::Ready(Err(e));
                        }
                    }
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(io::Error::other(format!(
                            "the download of {} broke off at byte {} of {} and cannot go on: {e}",
                            this.what, this.offset, this.size
                        ))));
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::AsyncReadExt;

    use super::*;

    /// Serves `data[from..]`, failing after `cut_after` bytes (a reset), or ending cleanly there
    /// when `eof` (a connection closed early).
    struct Cutting {
        data: Arc<Vec<u8>>,
        at: usize,
        stop: usize,
        eof: bool,
    }

    impl AsyncRead for Cutting {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.at >= self.stop {
                if self.eof || self.stop >= self.data.len() {
                    return Poll::Ready(Ok(()));
                }
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "connection reset by peer",
                )));
            }
            let n = buf.remaining().min(self.stop - self.at).min(1000);
            buf.put_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    fn data() -> Arc<Vec<u8>> {
        Arc::new((0..100_000u32).map(|i| (i * 7 % 251) as u8).collect())
    }

    /// A source whose connections break after the lengths in `cuts` (one per connection, then
    /// whole), recording the offsets asked for; `refuse` answers every reopen with that error.
    fn source(
        data: &Arc<Vec<u8>>,
        cuts: Vec<usize>,
        eof: bool,
        refuse: Option<fn() -> StoreError>,
    ) -> (Resuming, Arc<Mutex<Vec<u64>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let cuts = Arc::new(Mutex::new(cuts.into_iter()));
        let connection = {
            let (data, cuts) = (data.clone(), cuts.clone());
            move |from: usize| -> Body {
                let stop = cuts
                    .lock()
                    .unwrap()
                    .next()
                    .map_or(data.len(), |n| (from + n).min(data.len()));
                Box::new(Cutting {
                    data: data.clone(),
                    at: from,
                    stop,
                    eof,
                })
            }
        };
        let first = connection(0);
        let reopen: Reopen = {
            let asked = asked.clone();
            Box::new(move |from| {
                asked.lock().unwrap().push(from);
                let body = connection(usize::try_from(from).unwrap());
                async move {
                    match refuse {
                        Some(e) => Err(e()),
                        None => Ok(body),
                    }
                }
                .boxed()
            })
        };
        let size = data.len() as u64;
        let r = Resuming::new("s3://b/x.db".into(), size, first, reopen)
            .waiting(Duration::from_millis(1));
        (r, asked)
    }

    async fn read_all(mut r: Resuming) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.map(|_| out)
    }

    #[tokio::test]
    async fn a_download_cut_midway_goes_on_from_the_byte_it_reached_and_is_whole() {
        let data = data();
        let (r, asked) = source(&data, vec![30_000, 1, 50_000], false, None);
        assert_eq!(read_all(r).await.unwrap(), *data);
        assert_eq!(*asked.lock().unwrap(), vec![30_000, 30_001, 80_001]);
    }

    #[tokio::test]
    async fn a_connection_closed_early_without_an_error_is_resumed_too() {
        let data = data();
        let (r, asked) = source(&data, vec![64_000], true, None);
        assert_eq!(read_all(r).await.unwrap(), *data);
        assert_eq!(*asked.lock().unwrap(), vec![64_000]);
    }

    #[tokio::test]
    async fn cuts_in_a_row_without_a_byte_between_end_it_naming_the_object_and_the_byte() {
        let data = data();
        let mut cuts = vec![10_000];
        cuts.extend(std::iter::repeat_n(0, MAX_RESUMES as usize));
        let (r, asked) = source(&data, cuts, false, None);
        let err = read_all(r).await.unwrap_err().to_string();
        assert!(
            err.contains(
                "the download of s3://b/x.db broke off at byte 10000 of 100000 6 times in a row"
            ) && err.contains("connection reset"),
            "{err}"
        );
        assert_eq!(asked.lock().unwrap().len(), MAX_RESUMES as usize);
    }

    #[tokio::test]
    async fn progress_between_cuts_starts_the_count_again() {
        let data = data();
        // Twice as many cuts as allowed in a row, each after some bytes: read whole.
        let cuts = vec![5_000; 2 * MAX_RESUMES as usize];
        let (r, asked) = source(&data, cuts, false, None);
        assert_eq!(read_all(r).await.unwrap(), *data);
        assert_eq!(asked.lock().unwrap().len(), 2 * MAX_RESUMES as usize);
    }

    #[tokio::test]
    async fn an_object_replaced_meanwhile_is_not_stitched_onto_the_old_bytes() {
        let data = data();
        let replaced = || StoreError::Other {
            what: "cannot download s3://b/x.db from byte 20000".into(),
            detail: "it was replaced while it was read (its ETag changed); start again".into(),
            transient: false,
            source: None,
        };
        let (r, asked) = source(&data, vec![20_000], false, Some(replaced));
        let err = read_all(r).await.unwrap_err().to_string();
        assert!(
            err.contains("broke off at byte 20000 of 100000 and cannot go on")
                && err.contains("replaced while it was read"),
            "{err}"
        );
        assert_eq!(
            *asked.lock().unwrap(),
            vec![20_000],
            "asked once, not again"
        );
    }

    #[tokio::test]
    async fn a_store_unreachable_for_a_while_is_asked_again() {
        let data = data();
        let unreachable = || StoreError::Unreachable {
            endpoint: "http://s3".into(),
            bucket: "b".into(),
            what: "connection failed".into(),
            source: None,
        };
        let (r, asked) = source(&data, vec![20_000], false, Some(unreachable));
        let err = read_all(r).await.unwrap_err().to_string();
        assert!(err.contains("6 times in a row"), "{err}");
        assert!(
            asked.lock().unwrap().iter().all(|&at| at == 20_000),
            "every attempt asks from the byte reached"
        );
    }
}
