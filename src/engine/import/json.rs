//! Lenient reading of untrusted JSON values for the import readers: optional fields of the wrong
//! type read as missing, times in seconds, milliseconds or ISO 8601 text become milliseconds.
//! Must not import anything outside `crate::engine`.

use crate::engine::format::days_from_civil;
use crate::engine::model::Millis;
use serde_json::Value;

/// A string field, `None` when missing or not a string.
pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A string or number field as text (ids are sometimes numbers).
pub fn id_at(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub fn bool_at(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Latest plausible time (year 9999) in milliseconds; anything beyond is treated as missing.
const MAX_MS: f64 = 253_402_300_799_000.0;

/// A number of seconds (possibly fractional) as milliseconds.
pub fn secs(v: Option<&Value>) -> Option<Millis> {
    let f = v?.as_f64()? * 1000.0;
    (f.is_finite() && (0.0..=MAX_MS).contains(&f)).then_some(f.round() as Millis)
}

/// A number of milliseconds.
pub fn millis(v: Option<&Value>) -> Option<Millis> {
    let f = v?.as_f64()?;
    (f.is_finite() && (0.0..=MAX_MS).contains(&f)).then_some(f.round() as Millis)
}

/// A time of unknown unit: numbers below 1e11 are seconds (before 1973 in ms), else milliseconds;
/// above 1e14 microseconds, above 1e17 nanoseconds; text is ISO 8601.
pub fn any_time(v: Option<&Value>) -> Option<Millis> {
    match v? {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let ms = if f < 1e11 {
                f * 1000.0
            } else if f < 1e14 {
                f
            } else if f < 1e17 {
                f / 1000.0
            } else {
                f / 1_000_000.0
            };
            (ms.is_finite() && (0.0..=MAX_MS).contains(&ms)).then_some(ms.round() as Millis)
        }
        Value::String(s) => iso(s),
        _ => None,
    }
}

/// `YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|±HH:MM]` (no zone means UTC) as milliseconds.
pub fn iso(s: &str) -> Option<Millis> {
    let b = s.trim().as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    if matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        let (h, m) = (num(11, 2)?, num(14, 2)?);
        if b.get(13) != Some(&b':') || h > 23 || m > 59 {
            return None;
        }
        ms += (h * 3600 + m * 60) * 1000;
        let mut i = 16;
        if b.get(16) == Some(&b':') {
            let sec = num(17, 2)?;
            if sec > 60 {
                return None;
            }
            ms += sec * 1000;
            i = 19;
            if b.get(19) == Some(&b'.') {
                i = 20;
                let mut scale = 100;
                while let Some(d) = b.get(i).filter(|d| d.is_ascii_digit()) {
                    ms += i64::from(d - b'0') * scale;
                    scale /= 10;
                    i += 1;
                }
            }
        }
        match b.get(i) {
            Some(b'Z' | b'z') => {}
            Some(sign @ (b'+' | b'-')) => {
                let oh = num(i + 1, 2)?;
                let om = match b.get(i + 3) {
                    Some(b':') => num(i + 4, 2)?,
                    Some(_) => num(i + 3, 2)?,
                    None => 0,
                };
                let off = (oh * 60 + om) * 60_000;
                ms += if *sign == b'+' { -off } else { off };
            }
            _ => {}
        }
    }
    (0..=MAX_MS as i64).contains(&ms).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso("2024-03-19T16:03:09.123456Z"), Some(1_710_864_189_123));
        assert_eq!(iso("2024-03-19T18:03:09+02:00"), Some(1_710_864_189_000));
        assert_eq!(iso("2024-03-19"), Some(1_710_806_400_000));
        assert_eq!(iso("19/03/2024, 16:03:09"), None);
        assert_eq!(iso("2024-13-01"), None);
    }
}
