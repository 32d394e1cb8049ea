//! decode (bytes -> validated message) and the receiver's seq rules, over any [`Sink`].

use crate::json::SyntaxError;
use crate::message::{parse_message, MessageError, MessageSink};
use crate::schema::{
    validate_fields, Code, Direction, Fields, Rejection, MAX_LINE_BYTES, R_DIRECTION, R_NOT_JSON,
    R_NOT_OBJECT, R_NOT_UTF8, R_TOO_LARGE,
};

#[derive(Debug)]
pub enum DecodeError<E> {
    Rejected(Rejection),
    /// Building a value failed (a Python exception in the extension).
    Sink(E),
}

/// `_pure.decode` for a line given as bytes: too large, not UTF-8, not JSON, not an object,
/// then validate. On success `fields` describes the message.
pub fn decode_with<S: MessageSink>(
    line: &[u8],
    direction: Option<Direction>,
    sink: &mut S,
    fields: &mut Fields,
) -> Result<S::Value, DecodeError<S::Error>> {
    if line.len() >= MAX_LINE_BYTES {
        return Err(DecodeError::Rejected(Rejection::bare(
            Code::TooLarge,
            R_TOO_LARGE,
        )));
    }
    let value = match parse_message(line, sink, fields) {
        Ok(v) => v,
        Err(MessageError::Syntax(SyntaxError::InvalidUtf8)) => {
            return Err(DecodeError::Rejected(Rejection::bare(
                Code::Malformed,
                R_NOT_UTF8,
            )))
        }
        Err(MessageError::Syntax(_)) => {
            return Err(DecodeError::Rejected(Rejection::bare(
                Code::Malformed,
                R_NOT_JSON,
            )))
        }
        Err(MessageError::NotObject) => {
            return Err(DecodeError::Rejected(Rejection::bare(
                Code::Malformed,
                R_NOT_OBJECT,
            )))
        }
        Err(MessageError::Sink(e)) => return Err(DecodeError::Sink(e)),
    };
    let Some(direction) = direction else {
        return Err(DecodeError::Rejected(Rejection::bare(
            Code::Invalid,
            R_DIRECTION,
        )));
    };
    match validate_fields(fields, direction) {
        Ok(()) => Ok(value),
        Err(v) => Err(DecodeError::Rejected(Rejection::from_fields(
            v.code, v.reason, fields, v.errors,
        ))),
    }
}

/// The receiver's sequence state (`Receiver.seq`).
#[derive(Debug, Clone, Default)]
pub struct SeqState {
    pub seq: u64,
}

fn out_of_order(seq: u64, last: u64, type_: Option<String>, run: Option<String>) -> Rejection {
    Rejection {
        code: Code::OutOfOrder,
        reason: format!("seq {seq} does not follow {last}"),
        seq: None,
        type_,
        run,
        errors: None,
    }
}

impl SeqState {
    /// A message decoded and validated: consume its seq, or refuse it as out of order.
    pub fn accept(&mut self, fields: &Fields) -> Result<(), Rejection> {
        // A valid message always has a usable seq; 0 would only make it out of order.
        let seq = fields.usable_seq().unwrap_or(0);
        if seq <= self.seq {
            return Err(out_of_order(
                seq,
                self.seq,
                fields.type_text().map(str::to_owned),
                fields.run_text().map(str::to_owned),
            ));
        }
        self.seq = seq;
        Ok(())
    }

    /// A line was rejected: a fatal rejection passes untouched; a usable seq is consumed, or
    /// turns the rejection into out-of-order when it does not increase.
    pub fn reject(&mut self, rejection: Rejection) -> Rejection {
        if rejection.fatal() {
            return rejection;
        }
        if let Some(seq) = rejection.seq {
            if seq <= self.seq {
                return out_of_order(seq, self.seq, rejection.type_, rejection.run);
            }
            self.seq = seq;
        }
        rejection
    }
}
