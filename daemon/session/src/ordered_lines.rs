//! Parsing the lines of a large file on several threads while taking them in file order.
//!
//! Opening a 100,000-entry session is mostly JSON parsing, which does not depend on earlier
//! lines. The calling thread reads batches of whole lines and deals them to the parser
//! threads in turn (batch `i` to parser `i % n`), then takes the parsed batches back in the
//! same turn, so they come back in file order without being sorted. At most two batches per
//! parser are in flight, so the memory in use beyond what the caller keeps is a few batches,
//! whatever the size of the file.

use std::io::Read;
use std::num::NonZeroUsize;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Batches handed to each parser before the oldest result must be taken back: one being
/// parsed and one waiting, so a parser never waits for the reader between two batches.
const IN_FLIGHT_PER_PARSER: usize = 2;

/// Reads `reader` to its end, parses every line (newline included) with `parse` on `parsers`
/// threads, and gives each line with what `parse` made of it to `take`, in file order, on the
/// calling thread. Batches are about `batch_bytes` long (a longer line makes a batch of its
/// own). Returns the number of bytes read.
pub(crate) fn parse_in_order<R, T, P, F>(
    mut reader: R,
    parsers: NonZeroUsize,
    batch_bytes: usize,
    parse: P,
    mut take: F,
) -> std::io::Result<u64>
where
    R: Read,
    T: Send,
    P: Fn(&[u8]) -> T + Sync,
    F: FnMut(&[u8], T),
{
    std::thread::scope(|scope| {
        let mut to_parsers = Vec::with_capacity(parsers.get());
        let mut from_parsers = Vec::with_capacity(parsers.get());
        for index in 0..parsers.get() {
            let (batches, inbox) = sync_channel::<Vec<u8>>(IN_FLIGHT_PER_PARSER);
            let (results, outbox) = sync_channel::<(Vec<u8>, Vec<T>)>(IN_FLIGHT_PER_PARSER);
            let parse = &parse;
            std::thread::Builder::new()
                .name(format!("session-parse-{index}"))
                .spawn_scoped(scope, move || parse_batches(&inbox, &results, parse))?;
            to_parsers.push(batches);
            from_parsers.push(outbox);
        }
        let limit = IN_FLIGHT_PER_PARSER * parsers.get();
        let (mut sent, mut taken, mut read) = (0, 0, 0_u64);
        let mut take_next = |taken: &mut usize| {
            // A parser only stops early by panicking, which the scope then passes on.
            let Ok((batch, parsed)) = from_parsers[*taken % from_parsers.len()].recv() else {
                return false;
            };
            *taken += 1;
            read += batch.len() as u64;
            for (line, value) in lines(&batch).zip(parsed) {
                take(line, value);
            }
            true
        };
        let mut rest = Vec::new();
        while let Some(batch) = next_batch(&mut reader, &mut rest, batch_bytes)? {
            if sent - taken == limit && !take_next(&mut taken) {
                break;
            }
            if to_parsers[sent % to_parsers.len()].send(batch).is_err() {
                break;
            }
            sent += 1;
        }
        drop(to_parsers);
        while taken < sent && take_next(&mut taken) {}
        Ok(read)
    })
}

/// The next batch of whole lines: what is left over from the last read, then about
/// `batch_bytes` more, cut after the last newline (the rest is kept in `rest` for the next
/// batch). At the end of the input the batch ends with whatever is there. `None` once
/// everything was handed out.
fn next_batch(
    reader: &mut impl Read,
    rest: &mut Vec<u8>,
    batch_bytes: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut batch = std::mem::take(rest);
    batch.reserve(batch_bytes);
    loop {
        let want = batch_bytes.saturating_sub(batch.len()).max(4096);
        let got = reader.by_ref().take(want as u64).read_to_end(&mut batch)?;
        if got < want {
            // The end of the input.
            return Ok((!batch.is_empty()).then_some(batch));
        }
        if let Some(last_newline) = batch.iter().rposition(|&byte| byte == b'\n') {
            *rest = batch.split_off(last_newline + 1);
            return Ok(Some(batch));
        }
        // One line longer than a batch: read on until it ends.
    }
}

/// The lines of a batch, each with its newline (the file's last line may lack one).
fn lines(batch: &[u8]) -> impl Iterator<Item = &[u8]> {
    batch.split_inclusive(|&byte| byte == b'\n')
}

/// A parser thread: parses each batch it is given and passes it on with its results.
fn parse_batches<T>(
    inbox: &Receiver<Vec<u8>>,
    results: &SyncSender<(Vec<u8>, Vec<T>)>,
    parse: &impl Fn(&[u8]) -> T,
) {
    while let Ok(batch) = inbox.recv() {
        let parsed = lines(&batch).map(parse).collect();
        if results.send((batch, parsed)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &[u8], parsers: usize, batch_bytes: usize) -> (Vec<(Vec<u8>, usize)>, u64) {
        let mut seen = Vec::new();
        let read = parse_in_order(
            text,
            NonZeroUsize::new(parsers).unwrap(),
            batch_bytes,
            <[u8]>::len,
            |line, length| seen.push((line.to_vec(), length)),
        )
        .unwrap();
        (seen, read)
    }

    #[test]
    fn every_line_comes_back_once_in_order_with_its_result() {
        let text: Vec<u8> = (0..2_000)
            .flat_map(|n| format!("line {n} {}\n", "x".repeat(n % 37)).into_bytes())
            .collect();
        for parsers in [1, 2, 3] {
            for batch_bytes in [1, 50, 4096, 1 << 20] {
                let (seen, read) = lines_of(&text, parsers, batch_bytes);
                assert_eq!(read, text.len() as u64);
                assert_eq!(seen.len(), 2_000);
                let joined: Vec<u8> = seen.iter().flat_map(|(line, _)| line.clone()).collect();
                assert_eq!(joined, text, "{parsers} parsers, {batch_bytes}-byte batches");
                assert!(seen.iter().all(|(line, length)| line.len() == *length));
            }
        }
    }

    #[test]
    fn a_last_line_without_newline_and_an_empty_input_are_kept_as_they_are() {
        let (seen, read) = lines_of(b"a\nb\nlast", 2, 1);
        let lines: Vec<&[u8]> = seen.iter().map(|(line, _)| line.as_slice()).collect();
        assert_eq!(lines, [b"a\n".as_slice(), b"b\n", b"last"]);
        assert_eq!(read, 8);
        assert_eq!(lines_of(b"", 2, 64), (Vec::new(), 0));
    }

    #[test]
    fn a_read_error_is_returned() {
        struct Failing;
        impl std::io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk gone"))
            }
        }
        let result =
            parse_in_order(Failing, NonZeroUsize::MIN, 64, <[u8]>::len, |_: &[u8], _: usize| {});
        assert_eq!(result.unwrap_err().to_string(), "disk gone");
    }
}
