//! Sprig's arithmetic: integer functions convert every operand with cast's
//! `ToInt64` (so `add 1.9 1` is 2 and `div` truncates), float functions
//! with `ToFloat64`, and the decimal ones (`addf`, `subf`, `mulf`, `divf`)
//! compute in decimal as shopspring/decimal does, so `addf 0.1 0.2` is 0.3.

use super::args::{at_least, exactly, integer};
use super::convert::{to_float64, to_int64};
use super::{FuncError, Function};
use crate::values::Value;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("add", add),
    ("add1", add1),
    ("sub", sub),
    ("mul", mul),
    ("div", div),
    ("mod", modulo),
    ("max", max),
    ("biggest", max),
    ("min", min),
    ("maxf", maxf),
    ("minf", minf),
    ("floor", floor),
    ("ceil", ceil),
    ("round", round),
    ("addf", addf),
    ("add1f", add1f),
    ("subf", subf),
    ("mulf", mulf),
    ("divf", divf),
    ("until", until),
    ("untilStep", until_step),
    ("seq", seq),
];

fn add(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::Int(
        args.iter().fold(0i64, |a, b| a.wrapping_add(to_int64(b))),
    ))
}

fn add1(args: &[Value]) -> Result<Value, FuncError> {
    let [a] = exactly::<1>("add1", args)?;
    Ok(Value::Int(to_int64(a).wrapping_add(1)))
}

fn sub(args: &[Value]) -> Result<Value, FuncError> {
    let [a, b] = exactly::<2>("sub", args)?;
    Ok(Value::Int(to_int64(a).wrapping_sub(to_int64(b))))
}

fn mul(args: &[Value]) -> Result<Value, FuncError> {
    at_least("mul", args, 1)?;
    Ok(Value::Int(
        args[1..]
            .iter()
            .fold(to_int64(&args[0]), |a, b| a.wrapping_mul(to_int64(b))),
    ))
}

fn divide_by_zero() -> FuncError {
    FuncError::call("runtime error: integer divide by zero")
}

/// `div A B`: integer division truncating toward zero.
fn div(args: &[Value]) -> Result<Value, FuncError> {
    let [a, b] = exactly::<2>("div", args)?;
    let b = to_int64(b);
    if b == 0 {
        return Err(divide_by_zero());
    }
    Ok(Value::Int(to_int64(a).wrapping_div(b)))
}

/// `mod A B`: the remainder, with the sign of A as in Go.
fn modulo(args: &[Value]) -> Result<Value, FuncError> {
    let [a, b] = exactly::<2>("mod", args)?;
    let b = to_int64(b);
    if b == 0 {
        return Err(divide_by_zero());
    }
    Ok(Value::Int(to_int64(a).wrapping_rem(b)))
}

fn max(args: &[Value]) -> Result<Value, FuncError> {
    at_least("max", args, 1)?;
    Ok(Value::Int(args.iter().map(to_int64).max().unwrap_or(0)))
}

fn min(args: &[Value]) -> Result<Value, FuncError> {
    at_least("min", args, 1)?;
    Ok(Value::Int(args.iter().map(to_int64).min().unwrap_or(0)))
}

fn maxf(args: &[Value]) -> Result<Value, FuncError> {
    at_least("maxf", args, 1)?;
    Ok(Value::Float(
        args[1..]
            .iter()
            .map(to_float64)
            .fold(to_float64(&args[0]), f64::max),
    ))
}

fn minf(args: &[Value]) -> Result<Value, FuncError> {
    at_least("minf", args, 1)?;
    Ok(Value::Float(
        args[1..]
            .iter()
            .map(to_float64)
            .fold(to_float64(&args[0]), f64::min),
    ))
}

fn floor(args: &[Value]) -> Result<Value, FuncError> {
    let [a] = exactly::<1>("floor", args)?;
    Ok(Value::Float(to_float64(a).floor()))
}

fn ceil(args: &[Value]) -> Result<Value, FuncError> {
    let [a] = exactly::<1>("ceil", args)?;
    Ok(Value::Float(to_float64(a).ceil()))
}

/// `round V PLACES [HALF]`: Sprig's rounding, up from HALF (default .5) of
/// the fractional part at PLACES decimals.
fn round(args: &[Value]) -> Result<Value, FuncError> {
    at_least("round", args, 2)?;
    let value = to_float64(&args[0]);
    let places = integer(&args[1])?;
    let half = args.get(2).map_or(0.5, to_float64);
    let pow = 10f64.powi(places as i32);
    let digit = pow * value;
    let fraction = digit.fract();
    let rounded = if fraction >= half {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(rounded / pow))
}

/// A decimal number: `mantissa * 10^-scale`.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

impl Decimal {
    /// The shortest decimal that reads back as `x`, as
    /// `decimal.NewFromFloat` takes it.
    fn from_f64(x: f64) -> Option<Decimal> {
        if !x.is_finite() {
            return None;
        }
        let sci = format!("{x:e}");
        let (mantissa, exp) = sci.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let negative = mantissa.starts_with('-');
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let mut value: i128 = digits.parse().ok()?;
        let mut scale = digits.len() as i32 - 1 - exp;
        while scale < 0 {
            value = value.checked_mul(10)?;
            scale += 1;
        }
        if negative {
            value = -value;
        }
        Some(Decimal {
            mantissa: value,
            scale: scale as u32,
        })
    }

    fn rescale(self, scale: u32) -> Option<i128> {
        self.mantissa
            .checked_mul(10i128.checked_pow(scale - self.scale)?)
    }

    fn add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let sum = self.rescale(scale)?.checked_add(other.rescale(scale)?)?;
        Some(Decimal {
            mantissa: sum,
            scale,
        })
    }

    fn negate(self) -> Decimal {
        Decimal {
            mantissa: -self.mantissa,
            scale: self.scale,
        }
    }

    fn mul(self, other: Decimal) -> Option<Decimal> {
        Some(Decimal {
            mantissa: self.mantissa.checked_mul(other.mantissa)?,
            scale: self.scale.checked_add(other.scale)?,
        })
    }

    /// Division rounded half away from zero to 16 places, as
    /// `decimal.DivisionPrecision`.
    fn div(self, other: Decimal) -> Option<Decimal> {
        if other.mantissa == 0 {
            return None;
        }
        const PRECISION: u32 = 16;
        // self / other = (a / 10^sa) / (b / 10^sb); scale the numerator so the
        // quotient has PRECISION + 1 places, then round the last one.
        let shift = (PRECISION + 1 + other.scale).checked_sub(self.scale);
        let (numerator, denominator) = match shift {
            Some(s) => (
                self.mantissa.checked_mul(10i128.checked_pow(s)?)?,
                other.mantissa,
            ),
            None => (
                self.mantissa,
                other
                    .mantissa
                    .checked_mul(10i128.checked_pow(self.scale - PRECISION - 1 - other.scale)?)?,
            ),
        };
        let q = numerator / denominator;
        let rounded = if q.abs() % 10 >= 5 {
            q / 10 + q.signum()
        } else {
            q / 10
        };
        Some(Decimal {
            mantissa: rounded,
            scale: PRECISION,
        })
    }

    fn to_f64(self) -> f64 {
        let negative = self.mantissa < 0;
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let text = if digits.len() > scale {
            format!(
                "{}.{}",
                &digits[..digits.len() - scale],
                &digits[digits.len() - scale..]
            )
        } else {
            format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
        };
        let value: f64 = text.parse().unwrap_or(0.0);
        if negative { -value } else { value }
    }
}

/// Sprig's `execDecimalOp`, falling back to float arithmetic where the
/// decimal would not fit 128 bits.
fn decimal_fold(
    first: &Value,
    rest: &[Value],
    op: fn(Decimal, Decimal) -> Option<Decimal>,
    float_op: fn(f64, f64) -> f64,
) -> Value {
    let mut exact = Decimal::from_f64(to_float64(first));
    let mut approx = to_float64(first);
    for v in rest {
        let x = to_float64(v);
        exact = exact.and_then(|e| op(e, Decimal::from_f64(x)?));
        approx = float_op(approx, x);
    }
    Value::Float(exact.map_or(approx, Decimal::to_f64))
}

fn addf(args: &[Value]) -> Result<Value, FuncError> {
    Ok(decimal_fold(
        &Value::Float(0.0),
        args,
        Decimal::add,
        |a, b| a + b,
    ))
}

fn add1f(args: &[Value]) -> Result<Value, FuncError> {
    let [a] = exactly::<1>("add1f", args)?;
    Ok(decimal_fold(a, &[Value::Int(1)], Decimal::add, |a, b| {
        a + b
    }))
}

fn subf(args: &[Value]) -> Result<Value, FuncError> {
    at_least("subf", args, 1)?;
    Ok(decimal_fold(
        &args[0],
        &args[1..],
        |a, b| a.add(b.negate()),
        |a, b| a - b,
    ))
}

fn mulf(args: &[Value]) -> Result<Value, FuncError> {
    at_least("mulf", args, 1)?;
    Ok(decimal_fold(&args[0], &args[1..], Decimal::mul, |a, b| {
        a * b
    }))
}

fn divf(args: &[Value]) -> Result<Value, FuncError> {
    at_least("divf", args, 1)?;
    if args[1..].iter().any(|v| to_float64(v) == 0.0) {
        return Err(FuncError::call("decimal division by 0"));
    }
    Ok(decimal_fold(&args[0], &args[1..], Decimal::div, |a, b| {
        a / b
    }))
}

/// Sprig's `untilStep`: start, start+step, ... up to but excluding stop;
/// empty when the step points away from stop.
pub fn until_step_values(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut i = start;
    if stop < start {
        if step >= 0 {
            return out;
        }
        while i > stop {
            out.push(i);
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
    } else {
        if step <= 0 {
            return out;
        }
        while i < stop {
            out.push(i);
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
    }
    out
}

fn int_list(values: Vec<i64>) -> Value {
    Value::List(values.into_iter().map(Value::Int).collect())
}

/// The longest list `until`, `untilStep` and `seq` make (render limits).
const MAX_RANGE: i64 = 1_000_000;

fn check_range(start: i64, stop: i64, step: i64) -> Result<(), FuncError> {
    let span = (stop as i128 - start as i128).unsigned_abs();
    let count = span / (step as i128).unsigned_abs().max(1);
    if count > MAX_RANGE as u128 {
        return Err(FuncError::call(format!(
            "range of {count} elements is too large"
        )));
    }
    Ok(())
}

/// `until N`: 0..N (or 0 down to N+1 when N is negative).
fn until(args: &[Value]) -> Result<Value, FuncError> {
    let [count] = exactly::<1>("until", args)?;
    let count = integer(count)?;
    let step = if count < 0 { -1 } else { 1 };
    check_range(0, count, step)?;
    Ok(int_list(until_step_values(0, count, step)))
}

fn until_step(args: &[Value]) -> Result<Value, FuncError> {
    let [start, stop, step] = exactly::<3>("untilStep", args)?;
    let (start, stop, step) = (integer(start)?, integer(stop)?, integer(step)?);
    check_range(start, stop, step)?;
    Ok(int_list(until_step_values(start, stop, step)))
}

/// `seq [START [STEP]] END`: like GNU seq, as a space-separated string.
fn seq(args: &[Value]) -> Result<Value, FuncError> {
    let params: Vec<i64> = args.iter().map(integer).collect::<Result<_, _>>()?;
    let (start, stop, step) = match params[..] {
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            (1, end.saturating_add(inc), inc)
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            (start, end.saturating_add(step), step)
        }
        [start, step, end] => {
            let inc = if end < start { -1 } else { 1 };
            if end < start && step > 0 {
                return Ok("".into());
            }
            (start, end.saturating_add(inc), step)
        }
        _ => return Ok("".into()),
    };
    check_range(start, stop, step)?;
    let parts: Vec<String> = until_step_values(start, stop, step)
        .iter()
        .map(i64::to_string)
        .collect();
    Ok(parts.join(" ").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    #[test]
    fn integer_arithmetic_converts_operands() {
        assert_eq!(add(&[i(1), Value::Float(2.9), "3".into()]), Ok(i(6)));
        assert_eq!(add(&[]), Ok(i(0)));
        assert_eq!(add1(&[Value::Float(1.5)]), Ok(i(2)));
        assert_eq!(sub(&[i(5), i(7)]), Ok(i(-2)));
        assert_eq!(mul(&[i(2), i(3), i(4)]), Ok(i(24)));
        assert_eq!(div(&[i(7), i(2)]), Ok(i(3)));
        assert_eq!(div(&[i(-7), i(2)]), Ok(i(-3)));
        assert_eq!(modulo(&[i(-7), i(3)]), Ok(i(-1)));
        assert!(div(&[i(1), i(0)]).is_err());
        assert_eq!(max(&[i(1), Value::Float(5.0), i(3)]), Ok(i(5)));
        assert_eq!(min(&[i(1), i(-5), i(3)]), Ok(i(-5)));
    }

    #[test]
    fn float_and_decimal_arithmetic() {
        assert_eq!(
            addf(&[Value::Float(0.1), Value::Float(0.2)]),
            Ok(Value::Float(0.3))
        );
        assert_eq!(
            subf(&[Value::Float(1.5), Value::Float(0.2)]),
            Ok(Value::Float(1.3))
        );
        assert_eq!(mulf(&[Value::Float(1.1), i(3)]), Ok(Value::Float(3.3)));
        assert_eq!(divf(&[i(10), i(3)]), Ok(Value::Float(3.3333333333333335)));
        assert_eq!(divf(&[i(1), i(8)]), Ok(Value::Float(0.125)));
        assert_eq!(add1f(&[Value::Float(1.5)]), Ok(Value::Float(2.5)));
        assert_eq!(maxf(&[Value::Float(1.5), i(2)]), Ok(Value::Float(2.0)));
        assert_eq!(floor(&["1.7".into()]), Ok(Value::Float(1.0)));
        assert_eq!(ceil(&[Value::Float(1.2)]), Ok(Value::Float(2.0)));
        assert_eq!(
            round(&[Value::Float(123.555555), i(3)]),
            Ok(Value::Float(123.556))
        );
        assert_eq!(
            round(&[Value::Float(123.5555), i(3), Value::Float(0.6)]),
            Ok(Value::Float(123.555))
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(until(&[i(3)]), Ok(Value::List(vec![i(0), i(1), i(2)])));
        assert_eq!(until(&[i(-2)]), Ok(Value::List(vec![i(0), i(-1)])));
        assert_eq!(
            until_step(&[i(3), i(6), i(2)]),
            Ok(Value::List(vec![i(3), i(5)]))
        );
        assert_eq!(until_step(&[i(3), i(6), i(-1)]), Ok(Value::List(vec![])));
        assert_eq!(seq(&[i(3)]), Ok("1 2 3".into()));
        assert_eq!(seq(&[i(2), i(-2)]), Ok("2 1 0 -1 -2".into()));
        assert_eq!(seq(&[i(0), i(2), i(10)]), Ok("0 2 4 6 8 10".into()));
        assert_eq!(seq(&[i(0), i(-1)]), Ok("0 -1".into()));
        assert_eq!(seq(&[i(10), i(2), i(0)]), Ok("".into()));
        assert_eq!(seq(&[]), Ok("".into()));
        assert!(until(&[i(1 << 40)]).is_err());
        assert_eq!(
            until_step(&[i(i64::MAX - 1), i(i64::MAX), i(10)]),
            Ok(Value::List(vec![i(i64::MAX - 1)]))
        );
        assert!(seq(&[i(i64::MAX)]).is_err());
    }
}
