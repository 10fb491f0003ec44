//! Sprig's random functions: random strings (from the operating system's
//! secure random source, as Sprig uses `crypto/rand`), `randInt`,
//! `randBytes`, `uuidv4` and `shuffle`. Their output differs on every
//! render, as in Helm.
//!
//! Counts above [`MAX_RANDOM_LEN`] are refused so that a template cannot
//! make the renderer allocate without bound.

use super::args::{exactly, integer, text};
use super::encoding::base64_encode;
use super::{FuncError, Function};
use crate::values::Value;

/// The longest random string or byte run a template may ask for.
pub const MAX_RANDOM_LEN: i64 = 1 << 20;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("randAlphaNum", rand_alpha_num),
    ("randAlpha", rand_alpha),
    ("randNumeric", rand_numeric),
    ("randAscii", rand_ascii),
    ("randInt", rand_int),
    ("randBytes", rand_bytes),
    ("uuidv4", uuidv4),
    ("shuffle", shuffle),
];

/// Fills a buffer from the operating system's random source.
fn random_bytes(len: usize) -> Result<Vec<u8>, FuncError> {
    let mut buf = vec![0u8; len];
    getrandom::fill(&mut buf).map_err(|e| FuncError::call(format!("reading random bytes: {e}")))?;
    Ok(buf)
}

/// A uniform random number below `bound` (rejection sampling).
fn random_below(bound: u64) -> Result<u64, FuncError> {
    if bound <= 1 {
        return Ok(0);
    }
    let zone = u64::MAX - (u64::MAX % bound);
    loop {
        let bytes = random_bytes(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes);
        let n = u64::from_le_bytes(word);
        if n < zone {
            return Ok(n % bound);
        }
    }
}

/// `count` characters drawn uniformly from `alphabet`; "" for a negative
/// count, as Sprig swallows goutils' error.
fn random_string(count: &Value, alphabet: &[u8]) -> Result<Value, FuncError> {
    let count = integer(count)?;
    if count <= 0 {
        return Ok("".into());
    }
    if count > MAX_RANDOM_LEN {
        return Err(FuncError::call(format!(
            "random string length {count} is over the limit of {MAX_RANDOM_LEN}"
        )));
    }
    let mut out = String::with_capacity(count as usize);
    for _ in 0..count {
        out.push(alphabet[random_below(alphabet.len() as u64)? as usize] as char);
    }
    Ok(out.into())
}

const DIGITS: &[u8] = b"0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALPHANUMERIC: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn rand_alpha_num(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("randAlphaNum", args)?;
    random_string(count, ALPHANUMERIC)
}

fn rand_alpha(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("randAlpha", args)?;
    random_string(count, LETTERS)
}

fn rand_numeric(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("randNumeric", args)?;
    random_string(count, DIGITS)
}

/// `randAscii N`: printable ASCII from space to `~`.
fn rand_ascii(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("randAscii", args)?;
    let printable: Vec<u8> = (b' '..=b'~').collect();
    random_string(count, &printable)
}

/// `randInt MIN MAX`: MIN <= n < MAX.
fn rand_int(args: &[Value]) -> Result<Value, FuncError> {
    let [min, max] = exactly::<2>("randInt", args)?;
    let (min, max) = (integer(min)?, integer(max)?);
    let span = max
        .checked_sub(min)
        .filter(|s| *s > 0)
        .ok_or_else(|| FuncError::call("invalid argument to Intn"))?;
    Ok(Value::Int(min + random_below(span as u64)? as i64))
}

/// `randBytes N`: N random bytes in base64.
fn rand_bytes(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("randBytes", args)?;
    let count = integer(count)?;
    if !(0..=MAX_RANDOM_LEN).contains(&count) {
        return Err(FuncError::call(format!(
            "randBytes count {count} is out of range"
        )));
    }
    Ok(base64_encode(&random_bytes(count as usize)?).into())
}

/// A random (version 4) UUID in lower-case hex.
pub fn new_uuid() -> Result<String, FuncError> {
    let mut b = random_bytes(16)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = hex::encode(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

fn uuidv4(args: &[Value]) -> Result<Value, FuncError> {
    exactly::<0>("uuidv4", args)?;
    Ok(new_uuid()?.into())
}

/// `shuffle S`: the characters of S in random order.
fn shuffle(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("shuffle", args)?;
    let mut chars: Vec<char> = text(s)?.chars().collect();
    for i in (1..chars.len()).rev() {
        let j = random_below(i as u64 + 1)? as usize;
        chars.swap(i, j);
    }
    Ok(chars.into_iter().collect::<String>().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(v: Result<Value, FuncError>) -> String {
        match v {
            Ok(Value::String(s)) => s,
            other => panic!("expected a string, got {other:?}"),
        }
    }

    #[test]
    fn random_strings_have_the_asked_shape() {
        let s = text_of(rand_alpha_num(&[Value::Int(32)]));
        assert_eq!(s.len(), 32);
        assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(
            text_of(rand_numeric(&[Value::Int(10)]))
                .bytes()
                .all(|b| b.is_ascii_digit())
        );
        assert!(
            text_of(rand_alpha(&[Value::Int(10)]))
                .bytes()
                .all(|b| b.is_ascii_alphabetic())
        );
        assert!(
            text_of(rand_ascii(&[Value::Int(10)]))
                .bytes()
                .all(|b| (32..127).contains(&b))
        );
        assert_eq!(text_of(rand_alpha_num(&[Value::Int(-1)])), "");
        assert!(rand_alpha_num(&[Value::Float(3.0)]).is_err());
        assert!(rand_alpha_num(&[Value::Int(MAX_RANDOM_LEN + 1)]).is_err());
        assert_ne!(
            text_of(rand_alpha_num(&[Value::Int(32)])),
            text_of(rand_alpha_num(&[Value::Int(32)]))
        );
    }

    #[test]
    fn uuids_ints_bytes_and_shuffles() {
        let id = text_of(uuidv4(&[]));
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!("89ab".contains(&id[19..20]));
        for _ in 0..50 {
            assert!(
                matches!(rand_int(&[Value::Int(5), Value::Int(8)]), Ok(Value::Int(n)) if (5..8).contains(&n))
            );
        }
        assert!(rand_int(&[Value::Int(5), Value::Int(5)]).is_err());
        assert_eq!(text_of(rand_bytes(&[Value::Int(3)])).len(), 4);
        let mut shuffled: Vec<char> = text_of(shuffle(&["hello".into()])).chars().collect();
        shuffled.sort();
        assert_eq!(shuffled, vec!['e', 'h', 'l', 'l', 'o']);
    }
}
