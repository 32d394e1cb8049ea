//! [`RunMatch`]: whether an accepted line is one run's own, read from its bytes, for
//! `ScanBatch.foreign` (a parent forwarding a child's lines raw must still skip another run's).
//!
//! Most lines are proven own by their shape alone: a writer's line begins
//! `{"v":1,"seq":N,"type":"T","run":"R"`, and when R is the run byte for byte and no later key
//! can be `run` (a later duplicate key would win, as in a dict), the line is the run's. Any
//! other line is decoded again (with [`NullSink`]) and its `run` field read: exact, and rare.
//!
//! A later key can be `run` only if the rest of the line holds `"run"` or a `\u00` escape (every
//! other spelling of `run` escapes a letter: `\u0072`, `\u0075`, `\u006e` or `\u006E`); then
//! the line is decoded. A line whose keys are known unique (the fast check refuses any other)
//! needs no look.

use std::sync::OnceLock;

use memchr::memmem::Finder;

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
        }
    }

    /// Whether `line`, an accepted message of the receiver's direction, has this run.
    /// `unique_keys`: its top-level keys are known to be unique (it cannot hold a later `run`).
    pub fn is_own(&mut self, line: &[u8], unique_keys: bool) -> bool {
        let Some(run) = &self.run else {
            return false;
        };
        if let Some(segment) = &self.segment {
            if own_by_shape(line, segment, unique_keys) {
                return true;
            }
        }
        let fields = self.fields.get_or_insert_with(Fields::new);
        decode_with(line, self.direction, &mut NullSink, fields).is_ok()
            && fields.run_text() == Some(run.as_str())
    }
}

/// `rest` may hold a key that decodes to `run`: it holds `"run"`, or a `\u00` escape of `r`, `u`
/// or `n`. False alarms (in a value, in another key) only send the line to the exact check.
fn may_hold_run_key(rest: &[u8]) -> bool {
    static FINDERS: OnceLock<[Finder<'static>; 2]> = OnceLock::new();
    let [plain, escape] = FINDERS.get_or_init(|| [Finder::new(b"\"run\""), Finder::new(b"\\u00")]);
    plain.find(rest).is_some()
        || escape.find_iter(rest).any(|at| {
            matches!(
                rest.get(at + 4..at + 6),
                Some(b"72" | b"75" | b"6e" | b"6E")
            )
        })
}

/// `line` begins `{"v":1,"seq":N,"type":"T"` then `segment` and a `,` or `}`, and (unless its
/// keys are known to be unique) can hold no later `run` key.
fn own_by_shape(line: &[u8], segment: &[u8], unique_keys: bool) -> bool {
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
    matches!(rest.first(), Some(b',' | b'}')) && (unique_keys || !may_hold_run_key(rest))
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
        assert!(own_by_shape(line.as_bytes(), br#","run":"r-1""#, false));
        assert!(own(Some("r-1"), line));
        assert!(!own(Some("r-2"), line));
        assert!(!own(Some("r-"), line));
        assert!(!own(None, line));
    }

    #[test]
    fn a_later_duplicate_run_key_wins() {
        let line = r#"{"v":1,"seq":7,"type":"info","run":"r-1","summary":"s","run":"x"}"#;
        assert!(!own_by_shape(line.as_bytes(), br#","run":"r-1""#, false));
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

    /// Every spelling of the key `run`, escapes in either hex case included.
    fn spellings_of_run() -> Vec<String> {
        let letters: [&[&str]; 3] = [
            &["r", "\\u0072"],
            &["u", "\\u0075"],
            &["n", "\\u006e", "\\u006E"],
        ];
        let mut out = vec![String::new()];
        for options in letters {
            out = out
                .iter()
                .flat_map(|head| options.iter().map(move |o| format!("{head}{o}")))
                .collect();
        }
        out
    }

    #[test]
    fn a_later_run_key_written_with_escapes_wins() {
        let spellings = spellings_of_run();
        assert_eq!(spellings.len(), 12);
        for key in spellings {
            let line = format!(
                r#"{{"v":1,"seq":1,"type":"info","run":"r1","summary":"s","{key}":"other"}}"#
            );
            assert!(!own(Some("r1"), &line), "{line}");
            assert!(own(Some("other"), &line), "{line}");
        }
    }

    #[test]
    fn every_spelling_is_looked_at_and_plain_other_keys_are_not() {
        for key in spellings_of_run() {
            for (gap, colon) in [("", ":"), (" ", " : "), ("\t\r ", "\t:")] {
                let rest = format!(r#","a":1,{gap}"{key}"{colon}"x"}}"#);
                assert!(may_hold_run_key(rest.as_bytes()), "{rest}");
            }
        }
        for rest in [
            r#","summary":"run: r\u00e9","turn":1}"#,
            r#","runx":1,"xrun":2,"Run":4,"r un":5,"\u0052un":5}"#,
        ] {
            assert!(!may_hold_run_key(rest.as_bytes()), "{rest}");
        }
    }

    #[test]
    fn keys_that_are_not_run_leave_the_line_its_writers() {
        for key in [
            "runx",
            "\\u0072unx",
            "xrun",
            "ru",
            "Run",
            "\\u0052un",
            "ru\\u006e\\u0020",
            "\\\\u0072un",
        ] {
            let line = format!(
                r#"{{"v":1,"seq":1,"type":"info","run":"r1","summary":"s","{key}":"other"}}"#
            );
            assert!(own(Some("r1"), &line), "{line}");
            assert!(!own(Some("other"), &line), "{line}");
        }
        // an escape in a value is no key: the line is still its writer's
        let line = r#"{"v":1,"seq":1,"type":"info","run":"r1","summary":"\u0072un \u006e"}"#;
        assert!(own(Some("r1"), line));
    }

    #[test]
    fn a_nested_run_key_is_not_taken_for_the_top_level_one() {
        let line = r#"{"v":1,"seq":7,"type":"tool-call","run":"x","name":"t","id":"c","arguments":{"run":"r-1"}}"#;
        assert!(!own(Some("r-1"), line));
        assert!(own(Some("x"), line));
    }
}
