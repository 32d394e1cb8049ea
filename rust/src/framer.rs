//! Sans-IO line framing, as `_pure.Framer` does it: split on `\n` only, keep `\r`, return empty
//! lines, and cut a line that reaches `max_line_bytes` to its first `max_line_bytes` bytes, once,
//! skipping the rest of it up to its newline. The output never depends on how input was split.

use memchr::memchr;

/// A buffer that grew past this many bytes for one call is given back once its contents are no
/// longer needed (one large chunk must not keep its memory for the life of the receiver); below
/// it, buffers are kept and reused from call to call.
pub const RETAIN_BYTES: usize = 4 << 20;

/// Give back `v`'s memory when it is empty and holds more than [`RETAIN_BYTES`].
pub fn release<T>(v: &mut Vec<T>) {
    if v.is_empty() && v.capacity().saturating_mul(std::mem::size_of::<T>()) > RETAIN_BYTES {
        *v = Vec::new();
    }
}

#[derive(Debug, Clone)]
pub struct Framer {
    max_line_bytes: usize,
    buf: Vec<u8>,
    skipping: bool,
}

impl Framer {
    /// `max_line_bytes` must be at least 1 (the Python layer checks it).
    pub fn new(max_line_bytes: usize) -> Self {
        Framer {
            max_line_bytes: max_line_bytes.max(1),
            buf: Vec::new(),
            skipping: false,
        }
    }

    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Bytes of an unterminated line held for the next feed.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Frame `data`, calling `emit` with every line it completes, in order. Stops at the first
    /// error `emit` returns (the framer's state then reflects the lines emitted so far, plus the
    /// rest of `data` dropped: the caller reports the error and is not expected to go on).
    pub fn feed<E>(
        &mut self,
        data: &[u8],
        mut emit: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let cap = self.max_line_bytes;
        let mut data = data;
        if self.skipping {
            match memchr(b'\n', data) {
                None => return Ok(()),
                Some(nl) => {
                    self.skipping = false;
                    data = &data[nl + 1..];
                }
            }
        }
        if !self.buf.is_empty() {
            // The buffer holds less than `cap` bytes; what would take it past `cap` is never
            // emitted, so it is not copied either.
            let room = cap - self.buf.len();
            match memchr(b'\n', data) {
                Some(nl) => {
                    self.buf.extend_from_slice(&data[..nl.min(room)]);
                    data = &data[nl + 1..];
                    let line = std::mem::take(&mut self.buf);
                    emit(&line[..line.len().min(cap)])?;
                    self.buf = line;
                    self.buf.clear();
                    release(&mut self.buf);
                }
                None => {
                    self.buf.extend_from_slice(&data[..data.len().min(room)]);
                    if self.buf.len() >= cap {
                        let line = std::mem::take(&mut self.buf);
                        self.skipping = true;
                        emit(&line[..cap])?;
                        self.buf = line;
                        self.buf.clear();
                        release(&mut self.buf);
                    }
                    return Ok(());
                }
            }
        }
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', data) {
            let line = &data[start..nl];
            start = nl + 1;
            emit(&line[..line.len().min(cap)])?;
        }
        data = &data[start..];
        if data.len() >= cap {
            self.skipping = true;
            emit(&data[..cap])?;
        } else {
            self.buf.extend_from_slice(data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(cap: usize, pieces: &[&[u8]]) -> (Vec<Vec<u8>>, usize) {
        let mut f = Framer::new(cap);
        let mut out = Vec::new();
        for p in pieces {
            let _ = f.feed::<()>(p, |line| {
                out.push(line.to_vec());
                Ok(())
            });
        }
        (out, f.buffered())
    }

    #[test]
    fn splits_on_newline_only_and_keeps_cr_and_empty_lines() {
        let (lines, held) = frame_all(100, &[b"a\r\n\nb\xe2\x80\xa8c\nrest"]);
        assert_eq!(
            lines,
            vec![b"a\r".to_vec(), b"".to_vec(), b"b\xe2\x80\xa8c".to_vec()]
        );
        assert_eq!(held, 4);
    }

    #[test]
    fn tail_waits_for_the_next_feed() {
        let (lines, held) = frame_all(100, &[b"ab", b"c", b"d\nx"]);
        assert_eq!(lines, vec![b"abcd".to_vec()]);
        assert_eq!(held, 1);
    }

    #[test]
    fn over_long_line_is_cut_once_and_skipped_whatever_the_split() {
        let mut input = vec![b'x'; 25];
        input.extend_from_slice(b"\nok\n");
        input.extend(vec![b'y'; 10]);
        input.extend_from_slice(b"\n");
        let expected = vec![vec![b'x'; 10], b"ok".to_vec(), vec![b'y'; 10]];
        for split in 0..=input.len() {
            for split2 in split..=input.len() {
                let (lines, held) = frame_all(
                    10,
                    &[&input[..split], &input[split..split2], &input[split2..]],
                );
                assert_eq!(lines, expected, "split at {split}/{split2}");
                assert_eq!(held, 0);
            }
        }
    }

    #[test]
    fn a_huge_line_leaves_no_huge_buffer() {
        // a line begun in one feed and ended, far past the cap, in the next: only `cap` bytes
        // are buffered
        let mut f = Framer::new(100);
        let mut huge = vec![b'y'; 50 << 20];
        huge.push(b'\n');
        let mut got = Vec::new();
        for piece in [b"x".as_slice(), &huge, b"z\n"] {
            f.feed::<()>(piece, |line| {
                got.push(line.len());
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(got, vec![100, 1]);
        assert!(f.buf.capacity() <= RETAIN_BYTES, "{}", f.buf.capacity());
        // with a cap that large the line is buffered whole, then the memory is given back
        let mut f = Framer::new(usize::MAX);
        got.clear();
        for piece in [b"x".as_slice(), &huge, b"z\n"] {
            f.feed::<()>(piece, |line| {
                got.push(line.len());
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(got, vec![huge.len(), 1]);
        assert!(f.buf.capacity() <= RETAIN_BYTES, "{}", f.buf.capacity());
    }

    #[test]
    fn line_of_exactly_cap_bytes() {
        let (lines, held) = frame_all(4, &[b"abcd", b"\nz\n"]);
        assert_eq!(lines, vec![b"abcd".to_vec(), b"z".to_vec()]);
        assert_eq!(held, 0);
        let (lines, _) = frame_all(4, &[b"abc\n"]);
        assert_eq!(lines, vec![b"abc".to_vec()]);
    }
}
