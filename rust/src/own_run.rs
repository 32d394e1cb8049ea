//! [`RunMatch`]: whether an accepted line is one run's own, read from its bytes, for
//! `ScanBatch.foreign` (a parent forwarding a child's lines raw must still skip another run's).
//!
//! Most lines are proven own by their shape alone: a writer's line begins
//! `{"v":1,"seq":N,"type":"T","run":"R"`, and when R is the run byte for byte and `"run"` occurs
//! nowhere after it (a later duplicate key would win, as in a dict), the line is the run's. Any
//! other line is decoded again (with [`NullSink`]) and its `run` field read: exact, and rare.

use crate::codec::decode_with;
use crate::json::NullSink;
use crate::schema::{Direction, Fields};

/// Decides, for accepted lines, whether their `run` is one given run.
pub struct RunMatch {
    /// The run's text; `None`: no decoded run can equal it (it was not valid UTF-8).
    run: Option<String>,
    /// `,"run":"R"` as a writer puts it after the type, when R needs no escape.
    segment: Option<Vec<u8>>,
    direction: Option<Direction>,
    fields: Option<Fields>,
    /// Finds `"run"` (made once: a finder per line would cost more than the search).
    run_key: memchr::memmem::Finder<'static>,
}

impl RunMatch {
    pub fn new(run: Option<&str>, direction: Option<Direction>) -> Self {
        let segment = run
            .filter(|r| r.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\'))
            .map(|r| [b",\"run\":\"".as_slice(), r.as_bytes(), b"\""].concat());
        RunMatch {
            run: run.map(str::to_owned),
            segment,
            direction,
            fields: None,
            run_key: memchr::memmem::Finder::new(b"\"run\""),
        }
    }

    /// Whether `line`, an accepted message of the receiver's direction, has this run.
    /// `unique_keys`: its top-level keys are known to be unique (it cannot hold a later `run`).
    pub fn is_own(&mut self, line: &[u8], unique_keys: bool) -> bool {
        let Some(run) = &self.run else {
            return false;
        };
        if let Some(segment) = &self.segment {
            if own_by_shape(line, segment, (!unique_keys).then_some(&self.run_key)) {
                return true;
            }
        }
        let fields = self.fields.get_or_insert_with(Fields::new);
        decode_with(line, self.direction, &mut NullSink, fields).is_ok()
            && fields.run_text() == Some(run.as_str())
    }
}

/// `line` begins `{"v":1,"seq":N,"type":"T"` then `segment` and a `,` or `}`, and (with
/// `run_key`, for a line whose keys may repeat) has no `"run"` after that.
fn own_by_shape(line: &[u8], segment: &[u8], run_key: Option<&memchr::memmem::Finder<'_>>) -> bool {
    const START: &[u8] = b"{\"v\":1,\"seq\":";
    const TYPE: &[u8] = b",\"type\":\"";
    let Some(rest) = line.strip_prefix(START) else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let Some(rest) = rest[digits..].strip_prefix(TYPE) else {
        return false;
    };
    let Some(quote) = memchr::memchr(b'"', rest) else {
        return false;
    };
    if rest[..quote].contains(&b'\\') {
        return false;
    }
    let Some(rest) = rest[quote + 1..].strip_prefix(segment) else {
        return false;
    };
    matches!(rest.first(), Some(b',' | b'}')) && run_key.is_none_or(|key| key.find(rest).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(run: Option<&str>, line: &str) -> bool {
        RunMatch::new(run, Some(Direction::Event)).is_own(line.as_bytes(), false)
    }

    #[test]
    fn a_writers_line_is_proven_by_its_shape() {
        let line = r#"{"v":1,"seq":7,"type":"info","run":"r-1","summary":"s"}"#;
        let key = memchr::memmem::Finder::new(b"\"run\"");
        assert!(own_by_shape(
            line.as_bytes(),
            br#","run":"r-1""#,
            Some(&key)
        ));
        assert!(own(Some("r-1"), line));
        assert!(!own(Some("r-2"), line));
        assert!(!own(Some("r-"), line));
        assert!(!own(None, line));
    }

    #[test]
    fn a_later_duplicate_run_key_wins() {
        let line = r#"{"v":1,"seq":7,"type":"info","run":"r-1","summary":"s","run":"x"}"#;
        let key = memchr::memmem::Finder::new(b"\"run\"");
        assert!(!own_by_shape(
            line.as_bytes(),
            br#","run":"r-1""#,
            Some(&key)
        ));
        assert!(!own(Some("r-1"), line));
        assert!(own(Some("x"), line));
    }

    #[test]
    fn other_shapes_are_decoded() {
        for (line, run) in [
            (
                r#"{"run":"r-1","v":1,"seq":7,"type":"info","summary":"s"}"#,
                "r-1",
            ),
            (
                r#"{"v":1,"seq":7,"type":"info","run":"r\u002d1","summary":"s"}"#,
                "r-1",
            ),
            (
                r#"{ "v": 1, "seq": 7, "type": "info", "run": "r-1", "summary": "s" }"#,
                "r-1",
            ),
            (
                r#"{"v":1,"seq":7,"type":"info","run":"a\"b","summary":"s"}"#,
                "a\"b",
            ),
            (
                r#"{"v":1,"seq":7,"type":"info","run":"é","summary":"{\"run\":1}"}"#,
                "é",
            ),
        ] {
            assert!(own(Some(run), line), "{line}");
            assert!(!own(Some("other"), line), "{line}");
        }
    }

    #[test]
    fn a_nested_run_key_is_not_taken_for_the_top_level_one() {
        let line = r#"{"v":1,"seq":7,"type":"tool-call","run":"x","name":"t","id":"c","arguments":{"run":"r-1"}}"#;
        assert!(!own(Some("r-1"), line));
        assert!(own(Some("x"), line));
    }
}
