//! [`Fields`]: what the validator needs to know of one message, the [`Shape`] of each known
//! top-level field, plus the key orders seen so far (the message parser's predictions).

use super::{type_index, KeyId, MAX_SAFE_INTEGER};
use crate::json::Number;

/// Where a kept string's text sits in its [`Fields`]' arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextRef {
    start: u32,
    end: u32,
}

/// What the validator needs to know about a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Null,
    Bool(bool),
    Num(Number),
    /// A Python int outside the 64-bit ranges (only from `validate` of a Python dict); `text` is
    /// its decimal form when it was needed.
    BigInt {
        negative: bool,
        text: Option<TextRef>,
    },
    /// A string; its text is kept (in the [`Fields`] arena) only for [`KeyId::keeps_text`]
    /// fields. `None` there means the text could not be read as UTF-8 (a Python str with a lone
    /// surrogate).
    Str(Option<TextRef>),
    /// A list (the items of a top-level `refs` list are in [`Fields::ref_items`]).
    Array {
        empty: bool,
    },
    Object {
        empty: bool,
    },
    /// Anything else a Python dict may hold (not from JSON).
    Other,
}

impl Shape {
    pub(crate) fn is_number(&self) -> bool {
        matches!(self, Shape::Num(_) | Shape::BigInt { .. })
    }

    /// `_is_integral`: an int (never a bool), or a float with an integral value.
    pub(crate) fn is_integral(&self) -> bool {
        match self {
            Shape::Num(Number::Int(_) | Number::UInt(_)) | Shape::BigInt { .. } => true,
            Shape::Num(Number::Float(f)) => f.is_finite() && f.fract() == 0.0,
            _ => false,
        }
    }

    /// `_usable_seq` / `_ok_pos`: an integral number in 1..=MAX_SAFE_INTEGER, as an int.
    pub fn usable_pos(&self) -> Option<u64> {
        match *self {
            Shape::Num(Number::Int(i)) if (1..=MAX_SAFE_INTEGER as i64).contains(&i) => {
                Some(i as u64)
            }
            Shape::Num(Number::Float(f))
                if f.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER as f64).contains(&f) =>
            {
                Some(f as u64)
            }
            _ => None,
        }
    }

    /// `(below 1, above MAX_SAFE_INTEGER)` for a number.
    pub(crate) fn range(&self) -> (bool, bool) {
        let max = MAX_SAFE_INTEGER;
        match *self {
            Shape::Num(Number::Int(i)) => (i < 1, i > max as i64),
            Shape::Num(Number::UInt(u)) => (false, u > max),
            Shape::Num(Number::Float(f)) => (f < 1.0, f > max as f64),
            Shape::BigInt { negative, .. } => (negative, !negative),
            _ => (false, false),
        }
    }

    pub(crate) fn is_string(&self) -> bool {
        matches!(self, Shape::Str(_))
    }

    pub(crate) fn ok_object(&self) -> bool {
        matches!(self, Shape::Object { .. } | Shape::Array { empty: true })
    }

    pub(crate) fn ok_array(&self) -> bool {
        matches!(self, Shape::Array { .. } | Shape::Object { empty: true })
    }
}

/// The keys of a message's top-level object in order (`None`: an unknown key), up to the first
/// [`KeyOrder::MAX`]: a fixed array, copied whole (no allocation or capacity checks per key).
#[derive(Debug, Clone, Copy)]
struct KeyOrder {
    ids: [Option<KeyId>; KeyOrder::MAX],
    len: u8,
}

impl KeyOrder {
    const MAX: usize = 32;
    const EMPTY: KeyOrder = KeyOrder {
        ids: [None; KeyOrder::MAX],
        len: 0,
    };
}

/// The shapes of the known top-level fields of one message.
#[derive(Debug, Clone)]
pub struct Fields {
    /// Bit `id` is set when field `id` is present.
    pub(crate) present: u64,
    pub(crate) shapes: [Shape; KeyId::COUNT],
    /// The kept strings of this message, back to back (reused between messages: no allocation
    /// per message on the hot path).
    arena: String,
    /// The shapes of the items of a top-level `refs` list.
    pub ref_items: Vec<Shape>,
    /// The key order of the previous message, and of this one so far (`None`: an unknown key).
    prev_keys: KeyOrder,
    keys: KeyOrder,
    /// The key order last seen for each message type (index of `type_index`), used once this
    /// message's `type` is known: streams interleave types with different key orders.
    type_keys: Vec<KeyOrder>,
    current_type: Option<usize>,
    /// The order [`Fields::predicted`] reads: the previous message's, replaced by the last
    /// one of this message's type once the type is known (copied once, not looked up per key).
    predict: KeyOrder,
    /// The parser's buffer for decoded escaped strings, kept between messages (no allocation
    /// per line with an escape).
    pub(crate) scratch: Vec<u8>,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            present: 0,
            shapes: [Shape::Null; KeyId::COUNT],
            arena: String::new(),
            ref_items: Vec::new(),
            prev_keys: KeyOrder::EMPTY,
            keys: KeyOrder::EMPTY,
            type_keys: Vec::new(),
            current_type: None,
            predict: KeyOrder::EMPTY,
            scratch: Vec::new(),
        }
    }
}

impl Fields {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn clear(&mut self) {
        self.present = 0;
        self.arena.clear();
        if self.keys.len != 0 {
            if let Some(t) = self.current_type.take() {
                if self.type_keys.len() <= t {
                    self.type_keys.resize(t + 1, KeyOrder::EMPTY);
                }
                self.type_keys[t] = self.keys;
            }
            self.prev_keys = self.keys;
            self.keys.len = 0;
        }
        self.current_type = None;
        self.predict = self.prev_keys;
    }

    /// The key the previous message had at position `index` of its top-level object.
    #[inline]
    pub fn predicted(&self, index: usize) -> Option<KeyId> {
        if index < self.predict.len as usize {
            self.predict.ids[index]
        } else {
            None
        }
    }

    /// How many keys the previous message had.
    #[inline]
    pub fn predicted_len(&self) -> usize {
        self.prev_keys.len as usize
    }

    /// Record the key read at position `index` (a prediction for the next message).
    #[inline]
    pub fn saw_key(&mut self, index: usize, key: Option<KeyId>) {
        // Called once per key, with `index` counting from 0 after `clear`.
        if index < KeyOrder::MAX {
            self.keys.ids[index] = key;
            self.keys.len = index as u8 + 1;
        }
    }

    /// Keep a string's text; returns where it is.
    #[inline]
    pub fn push_text(&mut self, text: &str) -> TextRef {
        let start = self.arena.len() as u32;
        self.arena.push_str(text);
        TextRef {
            start,
            end: self.arena.len() as u32,
        }
    }

    #[inline]
    pub(crate) fn resolve(&self, r: TextRef) -> Option<&str> {
        self.arena.get(r.start as usize..r.end as usize)
    }

    /// The text of a string shape, when it was kept.
    #[inline]
    pub fn str_of(&self, shape: &Shape) -> Option<&str> {
        match *shape {
            Shape::Str(Some(r)) => self.resolve(r),
            _ => None,
        }
    }

    /// Record a field; a duplicate key replaces the earlier value, like a dict.
    #[inline]
    pub fn set(&mut self, id: KeyId, shape: Shape) {
        self.present |= 1 << id as u32;
        self.shapes[id as usize] = shape;
        if id == KeyId::Type {
            self.current_type = self.str_of(&shape).and_then(type_index);
            if let Some(order) = self.current_type.and_then(|t| self.type_keys.get(t)) {
                if order.len != 0 {
                    self.predict = *order;
                }
            }
        }
    }

    /// The index (see [`type_index`]) of this message's `type`, when it is a known type name.
    #[inline]
    pub fn type_index(&self) -> Option<usize> {
        self.current_type
    }

    #[inline]
    pub fn get(&self, id: KeyId) -> Option<&Shape> {
        if self.has(id) {
            Some(&self.shapes[id as usize])
        } else {
            None
        }
    }

    #[inline]
    pub(crate) fn has(&self, id: KeyId) -> bool {
        self.present & (1 << id as u32) != 0
    }

    /// `_usable_seq(msg.get("seq"))`.
    pub fn usable_seq(&self) -> Option<u64> {
        self.get(KeyId::Seq).and_then(Shape::usable_pos)
    }

    pub(crate) fn text(&self, id: KeyId) -> Option<&str> {
        self.get(id).and_then(|shape| self.str_of(shape))
    }

    /// `msg.get("type")` when it is a string (and readable).
    pub fn type_text(&self) -> Option<&str> {
        self.text(KeyId::Type)
    }

    pub fn run_text(&self) -> Option<&str> {
        self.text(KeyId::Run)
    }
}
