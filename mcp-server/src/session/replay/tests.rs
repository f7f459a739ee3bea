//! Unit tests of the replay buffer.

use super::*;

fn replay(max_events: usize, max_bytes: usize) -> Arc<Replay> {
    Replay::new(ReplayLimits {
        max_events,
        max_bytes,
    })
}

async fn event(reader: &mut Reader) -> (EventId, String) {
    match reader.next().await {
        Some(Item::Event { id, frame }) => (id, frame.to_string()),
        other => panic!("expected an event, got {other:?}"),
    }
}

#[test]
fn ids_round_trip_and_garbage_is_refused() {
    let id = EventId { stream: 7, seq: 0 };
    assert_eq!(id.to_string(), "7-0");
    assert_eq!(EventId::parse("7-0"), Some(id));
    for bad in [
        "",
        "-",
        "7",
        "7-",
        "-0",
        "a-1",
        "1-b",
        "+1-2",
        "1-2-3",
        " 1-2",
        "1-2 ",
        "1_2",
        "99999999999999999999999-1",
    ] {
        assert_eq!(EventId::parse(bad), None, "{bad:?}");
    }
}

#[tokio::test]
async fn a_stream_is_read_live_then_resumed_after_its_last_id() {
    let r = replay(100, 1 << 20);
    let mut first = r.open(false);
    let stream = first.stream();
    r.push(stream, "a".into());
    r.push(stream, "b".into());
    assert_eq!(event(&mut first).await.1, "a");
    drop(first);
    assert!(r.detached_since(stream).is_some());
    r.push(stream, "c".into());
    r.end_writer(stream);
    // Resumed after "a": "b" and "c", then the end.
    let Ok(Resume::Read {
        mut reader,
        standalone,
        ..
    }) = r.resume(EventId { stream, seq: 1 })
    else {
        panic!("resumable")
    };
    assert!(!standalone);
    assert_eq!(
        event(&mut reader).await,
        (EventId { stream, seq: 2 }, "b".into())
    );
    assert_eq!(event(&mut reader).await.1, "c");
    assert_eq!(reader.next().await, None);
    // "a" was acknowledged by the resumption; "b" and "c" stay until the next one.
    assert_eq!(r.kept(), (2, 2));
    drop(reader);
    // Everything read, no writer: nothing more will come.
    assert!(matches!(
        r.resume(EventId { stream, seq: 3 }),
        Ok(Resume::Ended)
    ));
    assert_eq!(r.kept(), (0, 0));
    // The stream is gone now.
    assert_eq!(r.resume(EventId { stream, seq: 3 }).err(), Some(NotHeld));
}

#[tokio::test]
async fn ids_never_sent_in_this_session_are_not_held() {
    let r = replay(100, 1 << 20);
    let other = replay(100, 1 << 20);
    let reader = r.open(false);
    let stream = reader.stream();
    r.push(stream, "a".into());
    // Position 2 was never sent; another session's replay has no such stream.
    assert_eq!(r.resume(EventId { stream, seq: 2 }).err(), Some(NotHeld));
    assert_eq!(
        other.resume(EventId { stream, seq: 0 }).err(),
        Some(NotHeld)
    );
    assert_eq!(
        r.resume(EventId {
            stream: stream + 1_000_000,
            seq: 0
        })
        .err(),
        Some(NotHeld)
    );
}

#[tokio::test]
async fn the_limits_drop_the_oldest_and_a_reader_is_told_the_gap() {
    let r = replay(3, 1 << 20);
    let reader = r.open(false);
    let stream = reader.stream();
    drop(reader);
    for frame in ["1", "2", "3", "4", "5"] {
        r.push(stream, frame.into());
    }
    assert_eq!(r.kept(), (3, 3));
    let Ok(Resume::Read { mut reader, .. }) = r.resume(EventId { stream, seq: 0 }) else {
        panic!("resumable")
    };
    assert_eq!(reader.next().await, Some(Item::Gap { missed: 2 }));
    assert_eq!(event(&mut reader).await.1, "3");
    // Bytes too: one 10-byte event pushes out everything older; it is kept alone
    // although it is over the limit.
    let r = replay(100, 8);
    let reader = r.open(false);
    let stream = reader.stream();
    r.push(stream, "abc".into());
    r.push(stream, "defg".into());
    assert_eq!(r.kept(), (2, 7));
    r.push(stream, "0123456789".into());
    assert_eq!(r.kept(), (1, 10));
}

#[tokio::test]
async fn a_newer_reader_ends_the_older_one() {
    let r = replay(100, 1 << 20);
    let mut old = r.open(false);
    let stream = old.stream();
    r.push(stream, "a".into());
    let Ok(Resume::Read {
        reader: mut new, ..
    }) = r.resume(EventId { stream, seq: 0 })
    else {
        panic!("resumable")
    };
    assert_eq!(old.next().await, None);
    assert_eq!(event(&mut new).await.1, "a");
}

#[tokio::test]
async fn a_request_given_up_is_redone_when_resumed_until_it_answered() {
    let r = replay(100, 1 << 20);
    let first = r.open(false);
    let stream = first.stream();
    let runs = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&runs);
    r.set_redo(
        stream,
        Redo(Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })),
    );
    drop(first);
    // Given up without a reader: the writer ends, the request stays redoable.
    assert!(r.end_writer_or_redo(stream).is_none());
    let Ok(Resume::Read {
        reader,
        redo: Some(Redo(again)),
        ..
    }) = r.resume(EventId { stream, seq: 0 })
    else {
        panic!("redone")
    };
    again();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Given up again while a reader is there: the writer passes to the next run.
    assert!(r.end_writer_or_redo(stream).is_some());
    // It answers: nothing to redo any more.
    r.push(stream, "response".into());
    r.forget_redo(stream);
    r.end_writer(stream);
    drop(reader);
    assert!(matches!(
        r.resume(EventId { stream, seq: 0 }),
        Ok(Resume::Read { redo: None, .. })
    ));
}

#[tokio::test]
async fn a_standalone_stream_gets_a_writer_when_resumed() {
    let r = replay(100, 1 << 20);
    let first = r.open(true);
    let stream = first.stream();
    r.push(stream, "a".into());
    drop(first);
    r.end_writer(stream);
    // No writer, but a standalone stream is read on: the resumption adds one.
    let Ok(Resume::Read {
        mut reader,
        standalone,
        ..
    }) = r.resume(EventId { stream, seq: 0 })
    else {
        panic!("resumable")
    };
    assert!(standalone);
    assert_eq!(event(&mut reader).await.1, "a");
    r.push(stream, "b".into());
    assert_eq!(event(&mut reader).await.1, "b");
    r.end_writer(stream);
    assert_eq!(reader.next().await, None);
}
