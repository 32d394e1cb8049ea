//! The drain without objects (`Receiver.scan`): frame a chunk, then decode, validate and
//! seq-check every line exactly as `Receiver.feed` does, but with a sink that builds nothing,
//! so what comes out is per line a verdict plus where the line's bytes are.
//!
//! Nothing here allocates per value: the JSON and the schema are checked in one streaming pass
//! over the bytes (the message parser records the top-level field shapes into the receiver's
//! reused [`Fields`], and [`NullSink`] drops every value). The decisions are made by the very
//! code `feed` runs ([`decode_with`], [`SeqState`]), so the two can never disagree. No Python is
//! needed: the extension runs [`scan_into`] with the GIL released and makes the Python objects
//! afterwards.
//!
//! Most lines never reach that code: [`crate::quick`] first tries a one-pass check that only
//! ever answers "certainly valid, with this seq and type" or "not sure"; the exact check above
//! decides the rest (and words every rejection).

use crate::codec::{decode_with, DecodeError, SeqState};
use crate::framer::Framer;
use crate::json::NullSink;
use crate::quick::Quick;
use crate::schema::{Direction, Fields, Rejection};

/// Where an accepted line's bytes are: in the chunk given to [`scan_into`], or in
/// [`Scan::held`] (a line begun in an earlier chunk, completed by this one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineAt {
    Input { start: usize, end: usize },
    Held { start: usize, end: usize },
}

/// What became of one non-empty line.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A valid, in-order message: its seq (as an int), its type (an index of
    /// [`crate::schema::type_index`]) and where its bytes are.
    Accepted {
        seq: u64,
        type_index: usize,
        line: LineAt,
        /// Accepted by [`crate::quick`], which refuses a line with a key twice: its top-level
        /// keys are unique.
        quick: bool,
    },
    /// The rejection `feed` would have returned for the line (boxed: rejections are rare and
    /// large, accepted lines are many and small).
    Rejected(Box<Rejection>),
}

/// The outcomes of one chunk, in order; reused from call to call (no allocation per line once
/// the vectors have grown to a chunk's size).
#[derive(Debug, Default)]
pub struct Scan {
    pub outcomes: Vec<Outcome>,
    /// Copies of the accepted lines that did not lie inside the chunk (at most one per chunk in
    /// practice: the line the framer had buffered).
    pub held: Vec<u8>,
    /// The fast path's state for the receiver's direction (made at the first scan).
    quick: Option<Quick>,
    /// The fast path's verdicts on every line since the `Scan` was made (not reset by
    /// [`Scan::clear`]).
    pub counts: QuickCounts,
}

/// How the lines given to [`scan_into`] were judged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct QuickCounts {
    /// Accepted by [`crate::quick`] alone.
    pub accepted: u64,
    /// Judged by the exact check: the fast path was not sure (or there is none: no valid
    /// direction), or its seq did not increase.
    pub deferred: u64,
}

impl Scan {
    /// Forgets the outcomes and held bytes (the counts stay).
    pub fn clear(&mut self) {
        self.outcomes.clear();
        self.held.clear();
    }

    /// [`Scan::clear`], then gives back the memory of what grew past
    /// [`crate::framer::RETAIN_BYTES`] (a call is done with the outcomes: one large chunk must not
    /// keep its memory until the receiver is dropped).
    pub fn release(&mut self) {
        self.clear();
        crate::framer::release(&mut self.outcomes);
        crate::framer::release(&mut self.held);
    }

    /// The bytes of an accepted line; `input` is the chunk the outcomes were made from.
    pub fn line<'a>(&'a self, input: &'a [u8], at: LineAt) -> &'a [u8] {
        match at {
            LineAt::Input { start, end } => &input[start..end],
            LineAt::Held { start, end } => &self.held[start..end],
        }
    }
}

/// A receiver's state as `feed` and `scan` share it.
pub struct ReceiverState<'a> {
    pub framer: &'a mut Framer,
    pub seq: &'a mut SeqState,
    pub fields: &'a mut Fields,
    /// `None`: the receiver's direction is not "event" or "control" (every line is rejected).
    pub direction: Option<Direction>,
}

/// One line through decode (with [`NullSink`]) and the seq rules: what `Receiver.feed` decides
/// for it, without the message.
#[inline]
pub fn judge(
    line: &[u8],
    direction: Option<Direction>,
    seq: &mut SeqState,
    fields: &mut Fields,
) -> Result<(u64, usize), Rejection> {
    match decode_with(line, direction, &mut NullSink, fields) {
        Ok(()) => {
            seq.accept(fields)?;
            // A valid message has a known type: its schema was found by this index.
            Ok((seq.seq, fields.type_index().unwrap_or(usize::MAX)))
        }
        Err(DecodeError::Rejected(r)) => Err(seq.reject(r)),
        Err(DecodeError::Sink(never)) => match never {},
    }
}

/// Frame `data` and judge every complete non-empty line, appending the outcomes to `out` in
/// order (the framer's buffer, `seq` and `fields` are updated as `feed` would update them).
pub fn scan_into(state: ReceiverState<'_>, data: &[u8], out: &mut Scan) {
    let ReceiverState {
        framer,
        seq,
        fields,
        direction,
    } = state;
    let input = data.as_ptr_range();
    let mut quick = match direction {
        Some(d) => match out.quick.take() {
            Some(q) if q.direction() == d => Some(q),
            _ => Some(Quick::new(d)),
        },
        None => None,
    };
    let _ = framer.feed::<std::convert::Infallible>(data, |line| {
        if line.is_empty() {
            return Ok(());
        }
        // The fast path accepts most lines outright; the exact check decides the rest.
        let fast = quick
            .as_mut()
            .and_then(|q| q.check(line))
            .filter(|&(s, _)| s > seq.seq);
        let quick_accepted = fast.is_some();
        let verdict = match fast {
            Some((s, t)) => {
                out.counts.accepted += 1;
                seq.seq = s;
                Ok((s, t))
            }
            None => {
                out.counts.deferred += 1;
                judge(line, direction, seq, fields)
            }
        };
        let outcome = match verdict {
            Ok((seq, type_index)) => {
                // The framer hands out either a slice of `data` or its own buffer (two distinct
                // allocations): the address tells which.
                let at = if input.contains(&line.as_ptr()) {
                    let start = line.as_ptr() as usize - data.as_ptr() as usize;
                    LineAt::Input {
                        start,
                        end: start + line.len(),
                    }
                } else {
                    let start = out.held.len();
                    out.held.extend_from_slice(line);
                    LineAt::Held {
                        start,
                        end: out.held.len(),
                    }
                };
                Outcome::Accepted {
                    seq,
                    type_index,
                    line: at,
                    quick: quick_accepted,
                }
            }
            Err(r) => Outcome::Rejected(Box::new(r)),
        };
        out.outcomes.push(outcome);
        Ok(())
    });
    out.quick = quick;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{type_index, Code, MAX_LINE_BYTES};

    type Seen = Result<(u64, String, Vec<u8>), Code>;

    fn scan_pieces(pieces: &[&[u8]]) -> Vec<Seen> {
        let mut framer = Framer::new(MAX_LINE_BYTES);
        let mut seq = SeqState::default();
        let mut fields = Fields::new();
        let mut all = Vec::new();
        let mut scan = Scan::default();
        for piece in pieces {
            scan.clear();
            let state = ReceiverState {
                framer: &mut framer,
                seq: &mut seq,
                fields: &mut fields,
                direction: Some(Direction::Event),
            };
            scan_into(state, piece, &mut scan);
            for o in &scan.outcomes {
                all.push(match o {
                    Outcome::Accepted {
                        seq,
                        type_index: t,
                        line,
                        ..
                    } => {
                        let name = crate::schema::EVENT_TYPES[*t].to_owned();
                        Ok((*seq, name, scan.line(piece, *line).to_vec()))
                    }
                    Outcome::Rejected(r) => Err(r.code),
                });
            }
        }
        all
    }

    const READY1: &[u8] = b"{\"v\":1,\"seq\":1,\"type\":\"ready\",\"run\":\"r\"}";
    const INFO2: &[u8] = b"{\"v\":1,\"seq\":2.0,\"type\":\"info\",\"run\":\"r\",\"summary\":\"s\"}";

    #[test]
    fn accepted_lines_carry_seq_type_and_their_exact_bytes_whatever_the_split() {
        let mut stream = Vec::new();
        for line in [READY1, b"", INFO2, READY1, b"nope"] {
            stream.extend_from_slice(line);
            stream.push(b'\n');
        }
        let expected = vec![
            Ok((1, "ready".to_owned(), READY1.to_vec())),
            Ok((2, "info".to_owned(), INFO2.to_vec())),
            Err(Code::OutOfOrder),
            Err(Code::Malformed),
        ];
        for cut in 0..=stream.len() {
            let got = scan_pieces(&[&stream[..cut], &stream[cut..]]);
            assert_eq!(got, expected, "cut at {cut}");
        }
        assert_eq!(type_index("info").map(|i| i < 22), Some(true));
    }

    #[test]
    fn the_counts_tell_the_quick_verdicts_from_the_exact_ones() {
        let mut framer = Framer::new(MAX_LINE_BYTES);
        let mut seq = SeqState::default();
        let mut fields = Fields::new();
        let mut scan = Scan::default();
        let escaped =
            b"{\"v\":1,\"seq\":3,\"type\":\"info\",\"run\":\"r\",\"summary\":\"\\u00e9\"}";
        for piece in [
            READY1,
            b"\n",
            INFO2,
            b"\n",
            READY1,
            b"\nnope\n",
            escaped,
            b"\n",
        ] {
            scan.clear();
            let state = ReceiverState {
                framer: &mut framer,
                seq: &mut seq,
                fields: &mut fields,
                direction: Some(Direction::Event),
            };
            scan_into(state, piece, &mut scan);
        }
        // READY1 once by the quick path; the float seq, the seq that does not increase, the
        // non-JSON line and the `\u` escape by the exact check.
        assert_eq!(
            scan.counts,
            QuickCounts {
                accepted: 1,
                deferred: 4
            }
        );
        scan.clear();
        assert_eq!(scan.counts.accepted + scan.counts.deferred, 5);
    }

    #[test]
    fn over_long_lines_are_rejected_once() {
        let mut long = vec![b'x'; MAX_LINE_BYTES + 10];
        long.push(b'\n');
        long.extend_from_slice(READY1);
        long.push(b'\n');
        let got = scan_pieces(&[&long]);
        assert_eq!(
            got,
            vec![
                Err(Code::TooLarge),
                Ok((1, "ready".to_owned(), READY1.to_vec()))
            ]
        );
    }
}
