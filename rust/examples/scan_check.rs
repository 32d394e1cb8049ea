//! The check of `Receiver.scan` without Python: [`drain::scan_into`] over a JSONL file cut into
//! line-aligned pieces of at most 64 KiB (as `benches/streams.py`'s `chunks` cuts them), one
//! receiver for the whole file. Prints the lines accepted and rejected and the time taken.
//!
//! ```sh
//! cargo build --release --example scan_check
//! target/release/examples/scan_check FILE [ROUNDS]
//! valgrind --tool=callgrind --dump-instr=no --toggle-collect='*scan_all*' \
//!     target/release/examples/scan_check FILE   # instructions in the check alone
//! ```

use std::time::Instant;

use fenwire_fast::codec::SeqState;
use fenwire_fast::drain::{scan_into, Outcome, ReceiverState, Scan};
use fenwire_fast::framer::Framer;
use fenwire_fast::schema::{Direction, Fields, MAX_LINE_BYTES};

const PIECE: usize = 64 * 1024;

/// Line-aligned pieces of at most `PIECE` bytes (a longer line is a piece of its own).
fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let mut end = (start + PIECE).min(data.len());
        if end < data.len() {
            end = match memchr::memrchr(b'\n', &data[start..end]) {
                Some(nl) => start + nl + 1,
                None => memchr::memchr(b'\n', &data[end..]).map_or(data.len(), |nl| end + nl + 1),
            };
        }
        out.push(&data[start..end]);
        start = end;
    }
    out
}

/// One receiver drains every piece; returns (accepted, rejected).
#[inline(never)]
fn scan_all(pieces: &[&[u8]]) -> (usize, usize) {
    let mut framer = Framer::new(MAX_LINE_BYTES);
    let mut seq = SeqState::default();
    let mut fields = Fields::new();
    let mut scan = Scan::default();
    let (mut accepted, mut rejected) = (0, 0);
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
            match o {
                Outcome::Accepted { .. } => accepted += 1,
                Outcome::Rejected(_) => rejected += 1,
            }
        }
    }
    (accepted, rejected)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: scan_check FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(1);
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    let pieces = pieces(&data);
    let mut best = f64::INFINITY;
    let mut counts = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        counts = std::hint::black_box(scan_all(std::hint::black_box(&pieces)));
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{path}: {} bytes, {} accepted, {} rejected, best {:.1} ms, {:.2} GB/s",
        data.len(),
        counts.0,
        counts.1,
        best * 1e3,
        data.len() as f64 / best / 1e9
    );
}
