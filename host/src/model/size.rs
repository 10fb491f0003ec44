//! Storage sizes written as Kubernetes quantities (`10Gi`, `500Mi`, `1G`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The most digits a size's number may have; keeps the arithmetic in range.
const MAX_DIGITS: usize = 24;
/// The largest decimal exponent accepted in `1e9` notation.
const MAX_EXPONENT: u32 = 18;

/// A size that is not a positive Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("size {size:?} {reason}")]
pub struct InvalidSize {
    /// The size as given.
    pub size: String,
    /// Why it was refused.
    pub reason: &'static str,
}

/// A positive storage size, kept as the operator wrote it and as a byte count.
///
/// Accepted: an unsigned decimal number (`1`, `1.5`) followed by a binary
/// suffix (`Ki Mi Gi Ti Pi Ei`), a decimal suffix (`k M G T P E`), a decimal
/// exponent (`5e9`, `5E9`), or nothing (bytes). Refused: zero, signs, the
/// milli suffix `m` and other fractions of a byte suffix, unknown suffixes.
/// A fractional byte count is rounded up, as Kubernetes does.
///
/// The written form is what reaches Kubernetes, so `1Gi` stays `1Gi`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Size {
    text: String,
    bytes: u128,
}

impl Size {
    /// Parses a quantity such as `10Gi`.
    ///
    /// # Errors
    ///
    /// [`InvalidSize`] naming the input and what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, InvalidSize> {
        let bytes = parse_bytes(text).map_err(|reason| InvalidSize {
            size: text.to_owned(),
            reason,
        })?;
        Ok(Self {
            text: text.to_owned(),
            bytes,
        })
    }

    /// The size as written (`10Gi`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The size in bytes, rounded up to a whole byte.
    pub fn bytes(&self) -> u128 {
        self.bytes
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for Size {
    type Error = InvalidSize;

    fn try_from(text: String) -> Result<Self, InvalidSize> {
        Self::parse(&text)
    }
}

impl From<Size> for String {
    fn from(size: Size) -> Self {
        size.text
    }
}

fn parse_bytes(text: &str) -> Result<u128, &'static str> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_len);
    let (mantissa, fraction_digits) = parse_number(number)?;
    let scaled = mantissa
        .checked_mul(suffix_multiplier(suffix)?)
        .ok_or("is too large")?;
    let bytes = scaled.div_ceil(10u128.pow(fraction_digits));
    if bytes == 0 {
        return Err("must be greater than zero");
    }
    Ok(bytes)
}

/// Splits `12.50` into the integer 1250 and its 2 fraction digits.
fn parse_number(number: &str) -> Result<(u128, u32), &'static str> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err("does not start with a number");
    }
    if fraction.contains('.') {
        return Err("has more than one decimal point");
    }
    let digits = format!("{whole}{fraction}");
    if digits.len() > MAX_DIGITS {
        return Err("has too many digits");
    }
    let mantissa = digits.parse::<u128>().map_err(|_| "is not a number")?;
    let fraction_digits = u32::try_from(fraction.len()).map_err(|_| "has too many digits")?;
    Ok((mantissa, fraction_digits))
}

/// How many bytes one unit of `suffix` is.
fn suffix_multiplier(suffix: &str) -> Result<u128, &'static str> {
    let binary = |power: u32| Ok(1u128 << (10 * power));
    let decimal = |power: u32| Ok(10u128.pow(3 * power));
    match suffix {
        "" => Ok(1),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "k" => decimal(1),
        "M" => decimal(2),
        "G" => decimal(3),
        "T" => decimal(4),
        "P" => decimal(5),
        "E" => decimal(6),
        "m" => Err("is in thousandths of a byte"),
        _ => exponent_multiplier(suffix),
    }
}

fn exponent_multiplier(suffix: &str) -> Result<u128, &'static str> {
    let digits = suffix
        .strip_prefix(['e', 'E'])
        .ok_or("has an unknown suffix (use Ki, Mi, Gi, Ti, k, M, G or T)")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("has a malformed exponent");
    }
    let exponent: u32 = digits.parse().map_err(|_| "has a malformed exponent")?;
    if exponent > MAX_EXPONENT {
        return Err("is too large");
    }
    Ok(10u128.pow(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(text: &str) -> u128 {
        match Size::parse(text) {
            Ok(size) => size.bytes(),
            Err(err) => panic!("{text}: {err}"),
        }
    }

    #[test]
    fn binary_and_decimal_suffixes() {
        assert_eq!(bytes("10Gi"), 10 * 1024 * 1024 * 1024);
        assert_eq!(bytes("500Mi"), 500 * 1024 * 1024);
        assert_eq!(bytes("1G"), 1_000_000_000);
        assert_eq!(bytes("2k"), 2000);
        assert_eq!(bytes("1Ei"), 1 << 60);
        assert_eq!(bytes("4096"), 4096);
    }

    #[test]
    fn fractions_and_exponents() {
        assert_eq!(bytes("1.5Gi"), 3 * 512 * 1024 * 1024);
        assert_eq!(bytes("0.5k"), 500);
        assert_eq!(bytes("5e9"), 5_000_000_000);
        assert_eq!(bytes("1E3"), 1000);
        assert_eq!(bytes("1.5"), 2, "a part of a byte rounds up");
        assert_eq!(bytes(".5Ki"), 512);
    }

    #[test]
    fn refuses_what_is_not_a_positive_size() {
        for bad in [
            "", "Gi", "0", "0Gi", "-1Gi", "+1Gi", "10gi", "10GB", "1.2.3Gi", "100m", "1e", "1e-3",
            "1e99", "10 Gi", "1.Gi.",
        ] {
            assert!(Size::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let huge = "9".repeat(30);
        assert!(Size::parse(&huge).is_err());
        assert!(Size::parse("999999999999999999999999Ei").is_err());
    }

    #[test]
    fn keeps_the_written_form_and_names_it_in_errors() {
        let size = Size::parse("1.5Gi");
        assert_eq!(size.map(|s| s.to_string()).ok(), Some("1.5Gi".to_owned()));
        let err = Size::parse("10GB").map(|_| ()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "size \"10GB\" has an unknown suffix (use Ki, Mi, Gi, Ti, k, M, G or T)"
        );
    }

    #[test]
    fn round_trips_through_serde_as_a_string() {
        let size: Size = serde_json::from_str("\"2Gi\"").unwrap();
        assert_eq!(size.bytes(), 2 << 30);
        assert_eq!(serde_json::to_string(&size).unwrap(), "\"2Gi\"");
        assert!(serde_json::from_str::<Size>("\"2x\"").is_err());
    }
}
