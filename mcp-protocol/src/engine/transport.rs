//! Transports move frames and nothing else: a [`Connection`] is a pair of channels, one
//! outbound ([`FrameSender`]) and one inbound ([`FrameReceiver`]).
//!
//! [`Connection::memory`] gives two connected ends for in-process tests;
//! [`Connection::from_io`] (and [`Connection::stdio`]) runs newline-delimited JSON over any
//! byte stream. Logs never go to stdout: stdout is the protocol stream.

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::codec::{
    AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead, FramedWrite, LinesCodec,
};

/// Frames above this size are refused unless configured otherwise (4 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// How many frames may wait in a channel before the sender waits.
pub const DEFAULT_CHANNEL_CAPACITY: usize = 256;

/// Why an inbound frame could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The frame was longer than the transport's limit; its bytes were discarded.
    #[error("frame exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The transport's limit, in bytes.
        limit: usize,
    },
    /// The frame was not valid UTF-8, so it cannot be JSON.
    #[error("frame is not valid UTF-8")]
    NotUtf8,
    /// Reading the byte stream failed; the connection ends after this.
    #[error("transport read failed: {0}")]
    Io(String),
}

/// What arrives on a [`FrameReceiver`].
pub type Inbound = Result<String, FrameError>;

/// The connection was closed: nobody receives frames any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("connection closed")]
pub struct Closed;

/// The outbound half of a connection. Cloning shares the channel.
#[derive(Debug, Clone)]
pub struct FrameSender(mpsc::Sender<Inbound>);

impl FrameSender {
    /// Queues one frame, waiting while the channel is full.
    pub async fn send(&self, frame: String) -> Result<(), Closed> {
        self.0.send(Ok(frame)).await.map_err(|_| Closed)
    }

    /// Queues one frame if there is room now; used where waiting is impossible (in `Drop`).
    pub fn try_send(&self, frame: String) -> Result<(), Closed> {
        self.0.try_send(Ok(frame)).map_err(|_| Closed)
    }

    /// True once the receiving side is gone.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// A sender/receiver pair for a transport that delivers frames itself (e.g. one HTTP
    /// response stream).
    pub fn channel(capacity: usize) -> (FrameSender, FrameReceiver) {
        let (tx, rx) = mpsc::channel(capacity);
        (FrameSender(tx), FrameReceiver(rx))
    }

    /// A sender whose receiver is gone: every send fails at once with [`Closed`]. One
    /// channel made once and shared, so a reply that carries nothing but its response
    /// (a JSON reply) allocates no channel of its own: cloning is a count's increment.
    pub fn closed() -> FrameSender {
        static CLOSED: std::sync::OnceLock<FrameSender> = std::sync::OnceLock::new();
        CLOSED.get_or_init(|| FrameSender::channel(1).0).clone()
    }
}

/// The inbound half of a connection.
#[derive(Debug)]
pub struct FrameReceiver(mpsc::Receiver<Inbound>);

impl FrameReceiver {
    /// The next frame, or `None` once every sender is gone.
    pub async fn recv(&mut self) -> Option<Inbound> {
        self.0.recv().await
    }
}

/// Both halves of one connection, as the engine sees it.
#[derive(Debug)]
pub struct Connection {
    /// Where frames to the other side go.
    pub sender: FrameSender,
    /// Where frames from the other side come from.
    pub receiver: FrameReceiver,
}

/// The background tasks that pump a byte stream; they end when the stream or the
/// connection ends.
#[derive(Debug)]
pub struct IoTasks {
    /// The task that reads frames from the stream.
    pub reader: JoinHandle<()>,
    /// The task that writes frames to the stream.
    pub writer: JoinHandle<()>,
}

impl Connection {
    /// Two connected in-memory ends: what one sends, the other receives.
    pub fn memory() -> (Connection, Connection) {
        let (a_tx, a_rx) = FrameSender::channel(DEFAULT_CHANNEL_CAPACITY);
        let (b_tx, b_rx) = FrameSender::channel(DEFAULT_CHANNEL_CAPACITY);
        (
            Connection {
                sender: b_tx,
                receiver: a_rx,
            },
            Connection {
                sender: a_tx,
                receiver: b_rx,
            },
        )
    }

    /// Newline-delimited JSON over this process's stdin and stdout.
    pub fn stdio(max_frame_bytes: usize) -> (Connection, IoTasks) {
        Connection::from_io(tokio::io::stdin(), tokio::io::stdout(), max_frame_bytes)
    }

    /// Newline-delimited JSON over any reader and writer (a child's pipes, a socket...).
    ///
    /// A line longer than `max_frame_bytes` is discarded and reported as
    /// [`FrameError::TooLarge`]; reading goes on with the next line.
    pub fn from_io<R, W>(reader: R, writer: W, max_frame_bytes: usize) -> (Connection, IoTasks)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (in_tx, in_rx) = mpsc::channel::<Inbound>(DEFAULT_CHANNEL_CAPACITY);
        let (out_tx, mut out_rx) = mpsc::channel::<Inbound>(DEFAULT_CHANNEL_CAPACITY);

        let reader = tokio::spawn(async move {
            let mut frames = FramedRead::new(reader, LineFrames::new(max_frame_bytes));
            while let Some(item) = frames.next().await {
                let item = match item {
                    Ok(Some(item)) => item,
                    Ok(None) => continue,
                    Err(e) => {
                        let _ = in_tx.send(Err(FrameError::Io(e.to_string()))).await;
                        break;
                    }
                };
                if in_tx.send(item).await.is_err() {
                    break;
                }
            }
        });

        let writer = tokio::spawn(async move {
            let mut sink = FramedWrite::new(writer, LinesCodec::new());
            while let Some(item) = out_rx.recv().await {
                let Ok(frame) = item else { continue };
                // Feed without flushing while more frames are queued; flush once idle.
                if SinkExt::<String>::feed(&mut sink, frame).await.is_err() {
                    break;
                }
                if out_rx.is_empty() && SinkExt::<String>::flush(&mut sink).await.is_err() {
                    break;
                }
            }
            let _ = SinkExt::<String>::close(&mut sink).await;
        });

        let conn = Connection {
            sender: FrameSender(out_tx),
            receiver: FrameReceiver(in_rx),
        };
        (conn, IoTasks { reader, writer })
    }
}

/// Newline-delimited frames with a length limit. An overlong line becomes one
/// [`FrameError::TooLarge`] item (its bytes discarded) and reading goes on; a line that is
/// not UTF-8 becomes [`FrameError::NotUtf8`]; a blank line is `None` (skipped). Errors are
/// items, not decoder errors, because a decoder error would end the stream.
struct LineFrames {
    inner: AnyDelimiterCodec,
    limit: usize,
}

impl LineFrames {
    fn new(limit: usize) -> Self {
        LineFrames {
            inner: AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), b"\n".to_vec(), limit),
            limit,
        }
    }

    fn item(
        &self,
        decoded: Result<Option<bytes::Bytes>, AnyDelimiterCodecError>,
    ) -> std::io::Result<Option<Option<Inbound>>> {
        match decoded {
            Ok(None) => Ok(None),
            Ok(Some(line)) => {
                let line = line.strip_suffix(b"\r").unwrap_or(&line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    return Ok(Some(None));
                }
                Ok(Some(Some(
                    String::from_utf8(line.to_vec()).map_err(|_| FrameError::NotUtf8),
                )))
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                Ok(Some(Some(Err(FrameError::TooLarge { limit: self.limit }))))
            }
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }
}

impl Decoder for LineFrames {
    type Item = Option<Inbound>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Self::Item>> {
        let decoded = self.inner.decode(buf);
        self.item(decoded)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Self::Item>> {
        let decoded = self.inner.decode_eof(buf);
        self.item(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_shared_closed_sender_refuses_every_frame() {
        for _ in 0..2 {
            let out = FrameSender::closed();
            assert!(out.is_closed());
            assert_eq!(out.try_send("{}".to_owned()), Err(Closed));
            assert_eq!(out.send("{}".to_owned()).await, Err(Closed));
        }
    }
}
