//! A server-sent events parser for Streamable HTTP replies: bytes in, `data` payloads out.
//!
//! Written here because the crate we used first (eventsource-stream 0.2.3) panics when a
//! byte-order mark at the start of a stream is split across chunks (found by our fuzz
//! target); a client must not die on whatever bytes a server sends. Follows the HTML
//! event-stream rules MCP needs: `data:` lines joined with `\n`, one optional space after
//! the colon dropped, comments and other fields ignored, an event dispatched at a blank
//! line, `\n`, `\r\n` and `\r` line ends, a leading BOM skipped.

/// An incremental parser: feed chunks, take complete events' data.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    data: Option<String>,
    started: bool,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    /// The last `id` field seen (the stream's position, for `Last-Event-ID`).
    last_id: Option<String>,
    /// The last `retry` field seen (ms to wait before reconnecting).
    retry_ms: Option<u64>,
}

/// The longest line kept; longer ones are cut (a frame that large is refused anyway).
const MAX_LINE: usize = 64 * 1024 * 1024;

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds `chunk`; returns the data of every event it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in chunk {
            // `\r\n` is one line end, even when split across chunks.
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.pending);
                    self.line(&line, &mut out);
                }
                _ if self.pending.len() < MAX_LINE => self.pending.push(b),
                _ => {}
            }
        }
        out
    }

    /// The last event id the stream gave (sent as `Last-Event-ID` to resume it).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the stream asked for with `retry`, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<String>) {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            raw = raw.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(raw);
        }
        if raw.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(data);
            }
            return;
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            // An id with NUL is ignored, as the HTML rules say.
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            // `event` and comments (empty field) do not matter to MCP.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

    fn all(chunks: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.feed(c)).collect()
    }

    #[test]
    fn events_and_line_ends() {
        assert_eq!(
            all(&[b"event: message\ndata: {\"a\":1}\n\n"]),
            vec!["{\"a\":1}"]
        );
        assert_eq!(all(&[b"data: a\r\ndata: b\r\n\r\n"]), vec!["a\nb"]);
        assert_eq!(all(&[b"data:x\r\r"]), vec!["x"]);
        assert_eq!(all(&[b": keep-alive\n\n", b"data: y\n", b"\n"]), vec!["y"]);
        assert_eq!(all(&[b"da", b"ta: spl", b"it\r", b"\n\r\n"]), vec!["split"]);
    }

    #[test]
    fn a_bom_split_across_chunks_is_skipped() {
        assert_eq!(all(&[&[0xEF], &[0xBB, 0xBF], b"data: z\n\n"]), vec!["z"]);
        assert_eq!(all(&[&[0xEF, 0xBB, 0xBF, b'd'], b"ata: w\n\n"]), vec!["w"]);
    }

    #[test]
    fn ids_and_retry_are_kept() {
        let mut p = SseParser::new();
        assert_eq!(p.feed(b"id: e-1\nretry: 500\ndata: \n\n"), vec![""]);
        assert_eq!(p.last_event_id(), Some("e-1"));
        assert_eq!(p.retry_ms(), Some(500));
        p.feed(b"retry: soon\nid: e-2\n\n");
        assert_eq!(p.last_event_id(), Some("e-2"));
        assert_eq!(p.retry_ms(), Some(500));
    }

    #[test]
    fn no_data_no_event_and_invalid_utf8_is_lossy() {
        assert!(all(&[b"event: ping\n\n"]).is_empty());
        assert_eq!(all(&[b"data: \xff\n\n"]), vec!["\u{fffd}"]);
    }
}
