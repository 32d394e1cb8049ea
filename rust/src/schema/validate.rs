//! The validator: [`validate_fields`] decides whether a message's [`Fields`] make a valid
//! message of a direction, and words the reason exactly as the pure backend does.

use super::types::{schema_at, schema_for, Kind, Schema, ACK_STATUSES, EXIT_STATUSES};
use super::{
    Code, Direction, FieldErrors, Fields, KeyId, Shape, Verdict, MAX_SAFE_INTEGER, R_V_REQUIRED,
    VERSION,
};
use crate::json::Number;

use KeyId as K;

fn push(errors: &mut FieldErrors, field: &str, message: &str) {
    errors.push((field.to_owned(), message.to_owned()));
}

/// `_errors_pos`.
fn errors_pos(shape: &Shape, field: &str, errors: &mut FieldErrors) {
    if !shape.is_integral() {
        push(errors, field, "must be an integer");
    }
    if shape.is_number() {
        let (low, high) = shape.range();
        if low {
            push(errors, field, "must be at least 1");
        } else if high {
            push(errors, field, "must be at most 9007199254740991");
        }
    }
}

fn enum_ok(shape: &Shape, fields: &Fields, choices: &[&str]) -> bool {
    fields.str_of(shape).is_some_and(|s| choices.contains(&s))
}

/// The errors of one field of kind `kind` (the `lister` of `_KINDS`), appended to `errors`.
fn field_errors(kind: Kind, shape: &Shape, fields: &Fields, field: &str, errors: &mut FieldErrors) {
    let simple = |ok: bool, message: &str, errors: &mut FieldErrors| {
        if !ok {
            push(errors, field, message);
        }
    };
    match kind {
        Kind::String => simple(shape.is_string(), "must be a string", errors),
        Kind::Boolean => simple(matches!(shape, Shape::Bool(_)), "must be a boolean", errors),
        Kind::Number => simple(shape.is_number(), "must be a number", errors),
        Kind::Integer => simple(shape.is_integral(), "must be an integer", errors),
        Kind::Object => simple(shape.ok_object(), "must be an object", errors),
        Kind::Any => {}
        Kind::AckStatus => simple(
            enum_ok(shape, fields, &ACK_STATUSES),
            "must be one of accepted, rejected, applied",
            errors,
        ),
        Kind::ExitStatus => simple(
            enum_ok(shape, fields, &EXIT_STATUSES),
            "must be one of done, cancelled, failed, timed-out",
            errors,
        ),
        Kind::Pos => {
            if shape.usable_pos().is_none() {
                errors_pos(shape, field, errors);
            }
        }
        Kind::Refs => {
            if !shape.ok_array() {
                push(errors, field, "must be an array");
            } else if let Shape::Array { .. } = shape {
                for (i, item) in fields.ref_items.iter().enumerate() {
                    if item.usable_pos().is_none() {
                        errors_pos(item, &format!("{field}[{i}]"), errors);
                    }
                }
            }
        }
    }
}

fn join(errors: &FieldErrors) -> String {
    let mut out = String::new();
    for (i, (field, message)) in errors.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        out.push_str(field);
        out.push(' ');
        out.push_str(message);
    }
    out
}

/// `str(int(v))` for an integral float: its exact decimal value.
pub fn integral_float_text(f: f64) -> String {
    if f.abs() < 1e18 {
        return format!("{}", f as i64);
    }
    // f = mantissa * 2^exp exactly, with exp > 0 here; multiply out in base 10^9.
    let bits = f.to_bits();
    let negative = (bits >> 63) != 0;
    let exp_bits = ((bits >> 52) & 0x7FF) as i32;
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    let exp = exp_bits - 1075;
    let mut limbs: Vec<u64> = vec![mantissa % 1_000_000_000, mantissa / 1_000_000_000];
    for _ in 0..exp {
        let mut carry = 0u64;
        for limb in limbs.iter_mut() {
            let v = *limb * 2 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut iter = limbs.iter().rev();
    if let Some(first) = iter.next() {
        out.push_str(&first.to_string());
    }
    for limb in iter {
        out.push_str(&format!("{limb:09}"));
    }
    out
}

/// `_version_reason(v)` for a `v` that is not the number 1.
fn version_reason(v: &Shape, fields: &Fields) -> String {
    let integral = match v {
        Shape::Num(Number::Int(i)) => Some(i.to_string()),
        Shape::Num(Number::UInt(u)) => Some(u.to_string()),
        Shape::Num(Number::Float(f)) if f.is_finite() && f.fract() == 0.0 => {
            Some(integral_float_text(*f))
        }
        Shape::BigInt { text, negative } => Some(
            text.and_then(|t| fields.resolve(t))
                .map(str::to_owned)
                .unwrap_or_else(|| if *negative { "-?".into() } else { "?".into() }),
        ),
        _ => None,
    };
    if let Some(n) = integral {
        return format!("wire version {n} is not supported; expected {VERSION}");
    }
    let kind = match v {
        Shape::Null => "a null",
        Shape::Bool(_) => "a boolean",
        Shape::Num(_) => "a non-integral number",
        Shape::Str(_) => "a string",
        Shape::Array { .. } => "an array",
        Shape::Object { .. } => "an object",
        Shape::BigInt { .. } => "an integer",
        Shape::Other => "a non-JSON value",
    };
    format!("wire version must be the number {VERSION}, not {kind}")
}

fn is_version(v: &Shape) -> bool {
    matches!(v, Shape::Num(Number::Int(1)))
        || matches!(v, Shape::Num(Number::Float(f)) if *f == 1.0)
}

/// `_envelope_errors`.
fn envelope_errors(fields: &Fields) -> FieldErrors {
    let mut errors = FieldErrors::new();
    for id in [K::Seq, K::Type, K::Run] {
        if !fields.has(id) {
            push(&mut errors, id.name(), "is required");
        }
    }
    if let Some(seq) = fields.get(K::Seq) {
        field_errors(Kind::Pos, seq, fields, "seq", &mut errors);
    }
    for id in [K::Type, K::Run] {
        if let Some(shape) = fields.get(id) {
            field_errors(Kind::String, shape, fields, id.name(), &mut errors);
        }
    }
    errors
}

/// `_Checker.errors`: missing required fields, then each present field in schema order, then
/// the control-ack rule.
/// Whether a present value of kind `kind` passes (the `_KINDS` predicates).
#[inline]
fn kind_ok(kind: Kind, shape: &Shape, fields: &Fields) -> bool {
    match kind {
        Kind::String => shape.is_string(),
        Kind::Boolean => matches!(shape, Shape::Bool(_)),
        Kind::Number => shape.is_number(),
        Kind::Integer => shape.is_integral(),
        Kind::Object => shape.ok_object(),
        Kind::Any => true,
        Kind::AckStatus => enum_ok(shape, fields, &ACK_STATUSES),
        Kind::ExitStatus => enum_ok(shape, fields, &EXIT_STATUSES),
        Kind::Pos => shape.usable_pos().is_some(),
        Kind::Refs => match shape {
            Shape::Array { .. } => fields.ref_items.iter().all(|s| s.usable_pos().is_some()),
            _ => shape.ok_array(),
        },
    }
}

/// The happy path of [`payload_errors`]: true when it would find nothing.
#[inline]
fn payload_ok(schema: &Schema, fields: &Fields) -> bool {
    if schema.required_mask & !fields.present != 0 {
        return false;
    }
    let mut bits = fields.present & schema.typed_mask;
    while bits != 0 {
        let id = bits.trailing_zeros() as usize;
        if !kind_ok(schema.kinds[id], &fields.shapes[id], fields) {
            return false;
        }
        bits &= bits - 1;
    }
    if schema.is_ack && !fields.has(K::Ref) {
        return fields.get(K::Status).and_then(|s| fields.str_of(s)) == Some("rejected");
    }
    true
}

fn payload_errors(schema: &Schema, fields: &Fields) -> FieldErrors {
    if payload_ok(schema, fields) {
        return FieldErrors::new();
    }
    let mut errors = FieldErrors::new();
    for &id in schema.required {
        if !fields.has(id) {
            push(&mut errors, id.name(), "is required");
        }
    }
    for &(id, kind) in schema.fields {
        if let Some(shape) = fields.get(id) {
            field_errors(kind, shape, fields, id.name(), &mut errors);
        }
    }
    if schema.is_ack && !fields.has(K::Ref) {
        if let Some(status) = fields.get(K::Status) {
            if fields.str_of(status) != Some("rejected") {
                push(&mut errors, "ref", "is required unless status is rejected");
            }
        }
    }
    errors
}

/// Why the message's type is unknown to `direction` (the `unknown-type` reason).
pub fn unknown_type_reason(direction: Direction, type_name: &str) -> String {
    if schema_for(direction.other(), type_name).is_some() {
        format!(
            "{type_name} is {} type, not {} type",
            direction.other().article(),
            direction.article()
        )
    } else {
        format!("unknown {} type: {type_name}", direction.name())
    }
}

/// `validate` after the direction and dict checks: `Ok(())` when the message is valid.
///
/// A `type` string whose text is unreadable (a lone surrogate, only possible from a Python
/// dict) is reported as unknown with the reason `unknown <direction> type: ` followed by
/// nothing; the Python layer renders that reason from the object itself.
#[inline]
pub fn validate_fields(fields: &Fields, direction: Direction) -> Result<(), Verdict> {
    // The happy path inline, with no error list made and dropped: `v` is the int 1, the
    // envelope is well formed, the type is known to `direction` and the payload passes.
    // Anything else (a float `v`, too) is decided again, with its reasons, out of line.
    let envelope_ok = matches!(fields.get(K::V), Some(Shape::Num(Number::Int(1))))
        && matches!(fields.get(K::Seq), Some(Shape::Num(Number::Int(i))) if (1..=MAX_SAFE_INTEGER as i64).contains(i))
        && matches!(fields.get(K::Type), Some(Shape::Str(_)))
        && matches!(fields.get(K::Run), Some(Shape::Str(_)));
    if envelope_ok {
        if let Some(schema) = fields.type_index().and_then(|i| schema_at(direction, i)) {
            if payload_ok(schema, fields) {
                return Ok(());
            }
        }
    }
    verdict(fields, direction)
}

/// [`validate_fields`] in full, with the reasons.
#[cold]
#[inline(never)]
fn verdict(fields: &Fields, direction: Direction) -> Result<(), Verdict> {
    let v = match fields.get(K::V) {
        None | Some(Shape::Null) => {
            return Err(Verdict {
                code: Code::Invalid,
                reason: R_V_REQUIRED.into(),
                errors: None,
            })
        }
        Some(v) => v,
    };
    if !is_version(v) {
        return Err(Verdict {
            code: Code::VersionMismatch,
            reason: version_reason(v, fields),
            errors: None,
        });
    }
    let fast_ok = matches!(fields.get(K::Seq), Some(Shape::Num(Number::Int(i))) if (1..=MAX_SAFE_INTEGER as i64).contains(i))
        && matches!(fields.get(K::Type), Some(Shape::Str(_)))
        && matches!(fields.get(K::Run), Some(Shape::Str(_)));
    if !fast_ok {
        let errors = envelope_errors(fields);
        if !errors.is_empty() {
            return Err(Verdict {
                code: Code::Invalid,
                reason: join(&errors),
                errors: Some(errors),
            });
        }
    }
    let type_name = fields.type_text();
    // The type's index was found when the field was recorded: no second lookup by name.
    let schema = fields.type_index().and_then(|i| schema_at(direction, i));
    let Some(schema) = schema else {
        let reason = unknown_type_reason(direction, type_name.unwrap_or(""));
        return Err(Verdict {
            code: Code::UnknownType,
            reason,
            errors: None,
        });
    };
    let errors = payload_errors(schema, fields);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Verdict {
            code: Code::InvalidPayload,
            reason: join(&errors),
            errors: Some(errors),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_float_text_is_exact() {
        assert_eq!(integral_float_text(2.0), "2");
        assert_eq!(integral_float_text(-3.0), "-3");
        assert_eq!(integral_float_text(1e20), "100000000000000000000");
        assert_eq!(
            integral_float_text(18446744073709551616.0),
            "18446744073709551616"
        );
        assert_eq!(integral_float_text(1e300), "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160");
        assert_eq!(integral_float_text(-1.7976931348623157e308), "-179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368");
    }
}
