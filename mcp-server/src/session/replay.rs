//! The replay buffer of an MCP 2025-11-25 session's event streams (SEP-1699).
//!
//! Every event the server sends on a resumable stream gets an id `"{stream}-{seq}"`: the
//! stream's number (unique in the process, so an id of another session names no stream
//! of this one) and its position in that stream (0 is the priming event, messages count
//! from 1). Ids are cursors within one stream, as the spec asks. The events are kept
//! until the client acknowledges them (a `Last-Event-ID` resuming after them) or the
//! session's limits push the oldest out; a [`Reader`] reads one stream from a cursor on:
//! what is kept, then what comes, until the stream's writers are gone.
//!
//! A stream has writers (the pump of a POST's handler; for the standalone stream, the
//! pump of each GET that carries it) and at most one reader: a newer reader (a resumed
//! connection) ends the older one, so no event is delivered on two connections at once.
//! A POST stream may be *redoable*: its request, cancelled because its client went away,
//! runs again (writing into the same stream) when the client resumes it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

/// Stream numbers, unique in the process.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);
/// Reader numbers, unique in the process (which connection reads a stream now).
static NEXT_READER: AtomicU64 = AtomicU64::new(1);

/// The id of an event: its stream and its position there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) stream: u64,
    pub(crate) seq: u64,
}

impl EventId {
    /// Reads an id this module wrote: two decimal numbers joined by `-`, nothing else.
    pub(crate) fn parse(text: &str) -> Option<EventId> {
        let (stream, seq) = text.split_once('-')?;
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        Some(EventId {
            stream: number(stream)?,
            seq: number(seq)?,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)
    }
}

/// How much one session keeps for replay.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplayLimits {
    /// Events kept, over all the session's streams (at least one); also the most
    /// streams kept that hold nothing (requests given up that a resumption would run
    /// again).
    pub(crate) max_events: usize,
    /// Bytes of event data kept; an event larger than this alone is still kept while it
    /// is the newest.
    pub(crate) max_bytes: usize,
}

/// One session's streams and the events kept for replay.
#[derive(Debug)]
pub(crate) struct Replay {
    limits: ReplayLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    streams: HashMap<u64, Stream>,
    /// Every kept event (stream, seq), oldest first: the order they are dropped in.
    order: VecDeque<(u64, u64)>,
    events: usize,
    bytes: usize,
    /// The session's newest standalone stream: kept even when empty and unread, so
    /// that the client can resume it from its priming event.
    standalone: Option<u64>,
}

impl Inner {
    /// Whether `stream` is idle: no writer, no reader, nothing kept, and not the newest
    /// standalone stream. Only a redoable request's stream is worth keeping then.
    fn is_idle(&self, stream: u64) -> bool {
        self.standalone != Some(stream)
            && self
                .streams
                .get(&stream)
                .is_some_and(|s| s.writers == 0 && s.reader == 0 && s.events.is_empty())
    }

    /// Forgets `stream` if nothing will ever be read from it: idle and not redoable.
    fn forget_if_done(&mut self, stream: u64) {
        if self.is_idle(stream) && self.streams.get(&stream).is_some_and(|s| s.redo.is_none()) {
            self.streams.remove(&stream);
        }
    }

    /// Keeps the number of streams within `max`: the oldest idle ones (redoable
    /// requests nobody resumed) go.
    fn forget_idle_beyond(&mut self, max: usize) {
        if self.streams.len() <= max {
            return;
        }
        let mut idle: Vec<u64> = self
            .streams
            .keys()
            .copied()
            .filter(|&id| self.is_idle(id))
            .collect();
        idle.sort_unstable();
        let excess = self.streams.len() - max;
        for id in idle.into_iter().take(excess) {
            self.streams.remove(&id);
        }
    }
}

#[derive(Debug)]
struct Stream {
    /// Kept events, a contiguous run of positions ending at `next_seq - 1`.
    events: VecDeque<(u64, Arc<str>)>,
    next_seq: u64,
    writers: usize,
    /// The reader reading now (0: none).
    reader: u64,
    /// Since when no reader reads it (`None` while one does).
    detached_since: Option<Instant>,
    /// The session's standalone stream (GET), not a POST's.
    standalone: bool,
    /// Woken on every change: an event, a writer gone, a reader come or gone.
    wake: Arc<Notify>,
    /// Runs the stream's request again (with a new writer), while it has not answered.
    redo: Option<Redo>,
}

/// Starts a stream's request again; the writer it needs is counted already.
#[derive(Clone)]
pub(crate) struct Redo(pub(crate) Arc<dyn Fn() + Send + Sync>);

impl fmt::Debug for Redo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Redo")
    }
}

/// What a reader reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    /// The next event.
    Event { id: EventId, frame: Arc<str> },
    /// `missed` events after the cursor are no longer kept (the limits pushed them out).
    Gap { missed: u64 },
}

/// The answer to a resumption.
#[derive(Debug)]
pub(crate) enum Resume {
    /// Read on from the cursor. `standalone`: the session's GET stream, which got a
    /// writer for the caller to carry; `redo`: the stream's request, given up, to run
    /// again in the writer it got.
    Read {
        reader: Reader,
        standalone: bool,
        redo: Option<Redo>,
    },
    /// The stream has ended and the client has all of it: nothing more will come.
    Ended,
}

/// A `Last-Event-ID` that names no event of a stream this session holds: never sent in
/// this session (another session's, or made up), or a stream no longer kept at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotHeld;

impl Replay {
    pub(crate) fn new(limits: ReplayLimits) -> Arc<Replay> {
        Arc::new(Replay {
            limits: ReplayLimits {
                max_events: limits.max_events.max(1),
                max_bytes: limits.max_bytes,
            },
            inner: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new stream with one writer, and the reader reading it from its start (after
    /// the priming event, position 0).
    pub(crate) fn open(self: &Arc<Self>, standalone: bool) -> Reader {
        let stream = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
        let reader = NEXT_READER.fetch_add(1, Ordering::Relaxed);
        let wake = Arc::new(Notify::new());
        let mut inner = self.lock();
        if standalone {
            let previous = inner.standalone.replace(stream);
            if let Some(previous) = previous {
                inner.forget_if_done(previous);
            }
        }
        inner.streams.insert(
            stream,
            Stream {
                events: VecDeque::new(),
                next_seq: 1,
                writers: 1,
                reader,
                detached_since: None,
                standalone,
                wake: Arc::clone(&wake),
                redo: None,
            },
        );
        inner.forget_idle_beyond(self.limits.max_events);
        drop(inner);
        Reader {
            replay: Arc::clone(self),
            stream,
            cursor: 0,
            id: reader,
            wake,
        }
    }

    /// Keeps `frame` as the next event of `stream`, then drops the oldest events while
    /// the session is over its limits.
    pub(crate) fn push(&self, stream: u64, frame: String) {
        let mut inner = self.lock();
        let Some(s) = inner.streams.get_mut(&stream) else {
            return;
        };
        let seq = s.next_seq;
        s.next_seq += 1;
        let size = frame.len();
        s.events.push_back((seq, Arc::from(frame)));
        s.wake.notify_waiters();
        inner.order.push_back((stream, seq));
        inner.events += 1;
        inner.bytes += size;
        while (inner.events > self.limits.max_events || inner.bytes > self.limits.max_bytes)
            && inner.events > 1
        {
            let Some((oldest_stream, oldest_seq)) = inner.order.pop_front() else {
                break;
            };
            let Some(s) = inner.streams.get_mut(&oldest_stream) else {
                continue;
            };
            if s.events.front().map(|(seq, _)| *seq) != Some(oldest_seq) {
                continue;
            }
            let dropped = s.events.pop_front().map_or(0, |(_, f)| f.len());
            inner.events -= 1;
            inner.bytes -= dropped;
            inner.forget_if_done(oldest_stream);
        }
    }

    /// One writer of `stream` is gone; once none is left, readers end after the last
    /// event.
    pub(crate) fn end_writer(&self, stream: u64) {
        let mut inner = self.lock();
        let Some(s) = inner.streams.get_mut(&stream) else {
            return;
        };
        s.writers = s.writers.saturating_sub(1);
        s.wake.notify_waiters();
        inner.forget_if_done(stream);
    }

    /// Makes `stream` redoable: `redo` runs its request again when the client resumes
    /// it after the request was given up, until [`forget_redo`](Self::forget_redo).
    pub(crate) fn set_redo(&self, stream: u64, redo: Redo) {
        if let Some(s) = self.lock().streams.get_mut(&stream) {
            s.redo = Some(redo);
        }
    }

    /// The request of `stream` answered: there is nothing to run again.
    pub(crate) fn forget_redo(&self, stream: u64) {
        if let Some(s) = self.lock().streams.get_mut(&stream) {
            s.redo = None;
        }
    }

    /// The writer of a request given up ends; if a reader has come meanwhile, the writer
    /// passes to the request's next run instead, returned to start.
    pub(crate) fn end_writer_or_redo(&self, stream: u64) -> Option<Redo> {
        {
            let inner = self.lock();
            let s = inner.streams.get(&stream)?;
            if s.reader != 0
                && let Some(redo) = &s.redo
            {
                return Some(redo.clone());
            }
        }
        self.end_writer(stream);
        None
    }

    /// Since when no reader reads `stream` (`None`: one does, or the stream is gone).
    pub(crate) fn detached_since(&self, stream: u64) -> Option<Instant> {
        self.lock()
            .streams
            .get(&stream)
            .and_then(|s| s.detached_since)
    }

    /// What wakes on every change of `stream`.
    pub(crate) fn wake(&self, stream: u64) -> Option<Arc<Notify>> {
        self.lock()
            .streams
            .get(&stream)
            .map(|s| Arc::clone(&s.wake))
    }

    /// Resumes the stream of `last` after it: the events up to `last` are acknowledged
    /// (dropped), and a new reader replaces the one reading now, if any. A standalone
    /// stream gets a writer, which the caller ends with [`end_writer`](Self::end_writer).
    pub(crate) fn resume(self: &Arc<Self>, last: EventId) -> Result<Resume, NotHeld> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let s = inner.streams.get_mut(&last.stream).ok_or(NotHeld)?;
        if last.seq >= s.next_seq {
            return Err(NotHeld);
        }
        let (mut acknowledged, mut freed) = (0, 0);
        while s.events.front().is_some_and(|(seq, _)| *seq <= last.seq) {
            if let Some((_, frame)) = s.events.pop_front() {
                acknowledged += 1;
                freed += frame.len();
            }
        }
        let ended =
            s.writers == 0 && last.seq + 1 == s.next_seq && !s.standalone && s.redo.is_none();
        let standalone = s.standalone;
        // A request given up runs again, in a new writer.
        let redo = if s.writers == 0 && !ended {
            s.redo.clone()
        } else {
            None
        };
        let reader = NEXT_READER.fetch_add(1, Ordering::Relaxed);
        let wake = Arc::clone(&s.wake);
        if !ended {
            if standalone || redo.is_some() {
                s.writers += 1;
            }
            s.reader = reader;
            s.detached_since = None;
            // The reader replaced, if any, sees it is no longer the one and ends.
            s.wake.notify_waiters();
        }
        if acknowledged > 0 {
            inner.events -= acknowledged;
            inner.bytes -= freed;
            inner
                .order
                .retain(|&(stream, seq)| stream != last.stream || seq > last.seq);
        }
        if ended {
            inner.forget_if_done(last.stream);
            return Ok(Resume::Ended);
        }
        Ok(Resume::Read {
            reader: Reader {
                replay: Arc::clone(self),
                stream: last.stream,
                cursor: last.seq,
                id: reader,
                wake,
            },
            standalone,
            redo,
        })
    }

    /// Events and bytes kept now (for tests and the limits' checks).
    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.events, inner.bytes)
    }
}

/// Reads one stream from a cursor on; ends when the stream's writers are gone and it
/// has read everything, or when a newer reader took the stream over. Dropping it leaves
/// the stream without a reader (detached), to be resumed.
#[derive(Debug)]
pub(crate) struct Reader {
    replay: Arc<Replay>,
    stream: u64,
    cursor: u64,
    id: u64,
    wake: Arc<Notify>,
}

impl Reader {
    /// The stream read.
    pub(crate) fn stream(&self) -> u64 {
        self.stream
    }

    /// The next item; `None` once the stream has ended (or another reader took it).
    /// Cancel-safe: nothing is consumed until it returns.
    pub(crate) async fn next(&mut self) -> Option<Item> {
        let wake = Arc::clone(&self.wake);
        loop {
            let notified = wake.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(item) = self.poll_once()? {
                return Some(item);
            }
            notified.await;
        }
    }

    /// `None`: the stream ended; `Some(None)`: nothing yet.
    fn poll_once(&mut self) -> Option<Option<Item>> {
        let inner = self.replay.lock();
        let s = inner.streams.get(&self.stream)?;
        if s.reader != self.id {
            return None;
        }
        let next = self.cursor + 1;
        let first_kept = s.events.front().map_or(s.next_seq, |(seq, _)| *seq);
        if next < first_kept {
            self.cursor = first_kept - 1;
            return Some(Some(Item::Gap {
                missed: first_kept - next,
            }));
        }
        let index = usize::try_from(next - first_kept).ok()?;
        if let Some((seq, frame)) = s.events.get(index) {
            self.cursor = *seq;
            return Some(Some(Item::Event {
                id: EventId {
                    stream: self.stream,
                    seq: *seq,
                },
                frame: Arc::clone(frame),
            }));
        }
        if s.writers == 0 {
            return None;
        }
        Some(None)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let mut inner = self.replay.lock();
        let Some(s) = inner.streams.get_mut(&self.stream) else {
            return;
        };
        if s.reader != self.id {
            return;
        }
        s.reader = 0;
        s.detached_since = Some(Instant::now());
        s.wake.notify_waiters();
        inner.forget_if_done(self.stream);
    }
}

#[cfg(test)]
mod tests;
