//! Parsing the lines of a large file on several threads while handing them on in file order.
//!
//! Opening a 100,000-entry session is mostly JSON parsing, which does not depend on earlier
//! lines. One thread reads batches of whole lines, each of the parser threads takes every
//! n-th batch, and the caller's thread takes the parsed batches back in the order they were
//! read (batch `i` always comes from parser `i % n`, so no reordering is needed). Channels
//! hold one batch each, so the memory in use beyond what the caller keeps is a few batches,
//! whatever the size of the file.

use std::io::BufRead;
use std::num::NonZeroUsize;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Whole lines read together, each with its newline (the file's last line may lack one).
struct Batch {
    bytes: Vec<u8>,
    /// Where each line ends in `bytes`.
    ends: Vec<usize>,
}

impl Batch {
    fn with_capacity(bytes: usize) -> Self {
        Self { bytes: Vec::with_capacity(bytes), ends: Vec::new() }
    }

    fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(self.ends.iter().copied()).map(|(start, end)| &self.bytes[start..end])
    }
}

/// Reads `reader` to its end, parses every line (newline included) with `parse` on `parsers`
/// threads, and gives each line with what `parse` made of it to `take`, in file order, on the
/// calling thread. Batches are about `batch_bytes` long. Returns the number of bytes read.
pub(crate) fn parse_in_order<R, T, P, F>(
    reader: R,
    parsers: NonZeroUsize,
    batch_bytes: usize,
    parse: P,
    mut take: F,
) -> std::io::Result<u64>
where
    R: BufRead + Send,
    T: Send,
    P: Fn(&[u8]) -> T + Sync,
    F: FnMut(&[u8], T),
{
    std::thread::scope(|scope| {
        let mut to_parsers = Vec::with_capacity(parsers.get());
        let mut from_parsers = Vec::with_capacity(parsers.get());
        for index in 0..parsers.get() {
            let (batches, inbox) = sync_channel::<Batch>(1);
            let (results, outbox) = sync_channel::<(Batch, Vec<T>)>(1);
            let parse = &parse;
            std::thread::Builder::new()
                .name(format!("session-parse-{index}"))
                .spawn_scoped(scope, move || parse_batches(&inbox, &results, parse))?;
            to_parsers.push(batches);
            from_parsers.push(outbox);
        }
        let reading = std::thread::Builder::new()
            .name("session-read".into())
            .spawn_scoped(scope, move || read_batches(reader, &to_parsers, batch_bytes))?;
        let mut read = 0_u64;
        for outbox in from_parsers.iter().cycle() {
            let Ok((batch, parsed)) = outbox.recv() else { break };
            read += batch.bytes.len() as u64;
            for (line, value) in batch.lines().zip(parsed) {
                take(line, value);
            }
        }
        match reading.join() {
            Ok(result) => result.map(|()| read),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The reading thread: batches of whole lines, dealt to the parsers in turn. Ends (closing
/// every parser's inbox) at the end of the input or on a read error.
fn read_batches(
    mut reader: impl BufRead,
    parsers: &[SyncSender<Batch>],
    batch_bytes: usize,
) -> std::io::Result<()> {
    for parser in parsers.iter().cycle() {
        let mut batch = Batch::with_capacity(batch_bytes);
        while batch.bytes.len() < batch_bytes {
            if reader.read_until(b'\n', &mut batch.bytes)? == 0 {
                break;
            }
            batch.ends.push(batch.bytes.len());
        }
        if batch.ends.is_empty() || parser.send(batch).is_err() {
            break;
        }
    }
    Ok(())
}

/// A parser thread: parses each batch it is given and passes it on with its results.
fn parse_batches<T>(
    inbox: &Receiver<Batch>,
    results: &SyncSender<(Batch, Vec<T>)>,
    parse: &impl Fn(&[u8]) -> T,
) {
    while let Ok(batch) = inbox.recv() {
        let parsed = batch.lines().map(parse).collect();
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
        let reader = std::io::BufReader::new(Failing);
        let result =
            parse_in_order(reader, NonZeroUsize::MIN, 64, <[u8]>::len, |_: &[u8], _: usize| {});
        assert_eq!(result.unwrap_err().to_string(), "disk gone");
    }
}
