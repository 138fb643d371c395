//! `Quantity`: a size in bytes, parsed once from a Kubernetes quantity ("1Gi", "500M",
//! "1073741824", "1e9") where it enters (the spec at validation, a flag, an observed claim), so
//! that nothing downstream parses text again.

use std::fmt;

use serde::{Serialize, Serializer};

/// A size in bytes and the text it was written as. Shown (and written into claim templates) as
/// that text, so a spec's "1024Mi" stays "1024Mi"; compared as sizes with [`Quantity::bytes`]
/// (`same_size`: "1024Mi" is "1Gi"). Equality (`==`) is of the text and the bytes, as the text
/// was compared before the type existed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    text: String,
    bytes: u64,
}

/// The binary (`Ki`..`Ei`) and decimal (`k`..`E`) suffixes of a byte quantity, with their
/// multipliers. (`m`, thousandths, is no size of a volume.)
const SUFFIXES: [(&str, u128); 13] = [
    ("", 1),
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
    ("Ei", 1 << 60),
    ("k", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("P", 1_000_000_000_000_000),
    ("E", 1_000_000_000_000_000_000),
];

/// What a [`Quantity::parse`] refused: the sentence to follow the text in an error.
const NOT_A_SIZE: &str = "is not a size; use a number and one of the suffixes Ki, Mi, Gi, Ti, Pi, Ei (binary) or k, M, G, T, P, E (decimal), e.g. 1Gi or 500Mi";

impl Quantity {
    /// Parses a Kubernetes quantity: a number (digits, an optional '.' and fraction), then a
    /// binary or decimal suffix or a decimal exponent (`e`/`E`, e.g. "1e9"). Fractions of a
    /// byte round up, as the API server's integer value does. The error says what is wrong and
    /// how to write it (the caller names the field).
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let end = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(format!("{text:?} {NOT_A_SIZE}"));
        }
        let (multiplier, exponent) = match SUFFIXES.iter().find(|(s, _)| *s == unit) {
            Some((_, m)) => (*m, 0),
            None => match unit.strip_prefix(['e', 'E']).map(str::parse::<i32>) {
                Some(Ok(e)) => (1, e),
                _ => return Err(format!("{text:?} {NOT_A_SIZE}")),
            },
        };
        let too_large = || {
            format!(
                "{text:?} is larger than the largest size (16 EiB); give a size in bytes up to {}",
                u64::MAX
            )
        };
        let mut mantissa: u128 = 0;
        for d in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(u128::from(d - b'0')))
                .ok_or_else(too_large)?;
        }
        let scaled = mantissa.checked_mul(multiplier).ok_or_else(too_large)?;
        // The value is scaled × 10^power; a negative power divides, rounding up.
        let power = i64::from(exponent) - fraction.len() as i64;
        let bytes = if scaled == 0 {
            0
        } else if power >= 0 {
            u32::try_from(power)
                .ok()
                .and_then(|p| 10u128.checked_pow(p))
                .and_then(|f| scaled.checked_mul(f))
                .ok_or_else(too_large)?
        } else {
            match u32::try_from(-power)
                .ok()
                .and_then(|p| 10u128.checked_pow(p))
            {
                Some(f) => scaled.div_ceil(f),
                None => u128::from(scaled > 0),
            }
        };
        let bytes = u64::try_from(bytes).map_err(|_| too_large())?;
        Ok(Quantity {
            text: text.to_string(),
            bytes,
        })
    }

    /// A quantity read back from the cluster (a claim's size or capacity, a template's): `None`
    /// when the API server holds something no size (it does not: it checks quantities).
    pub fn read(text: &str) -> Option<Quantity> {
        Quantity::parse(text).ok()
    }

    /// The size of a claim template that asks for none (the API server requires one): no
    /// text, no bytes, the same size as no spec's.
    pub fn unset() -> Quantity {
        Quantity {
            text: String::new(),
            bytes: 0,
        }
    }

    /// `n` GiB, written "{n}Gi".
    pub fn gib(n: u64) -> Quantity {
        Quantity {
            text: format!("{n}Gi"),
            bytes: n.saturating_mul(1 << 30),
        }
    }

    /// The size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The size in bytes as the signed integers etcd's quota and the volume arithmetic use.
    pub fn signed_bytes(&self) -> i64 {
        i64::try_from(self.bytes).unwrap_or(i64::MAX)
    }

    /// The text it was written as.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether both name the same size ("1Gi" and "1024Mi" do).
    pub fn same_size(&self, other: &Quantity) -> bool {
        self.bytes == other.bytes
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Tests write sizes as text (`"1Gi".into()`); a size that is none fails the test.
#[cfg(test)]
impl From<&str> for Quantity {
    fn from(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(text: &str) -> u64 {
        Quantity::parse(text).unwrap().bytes()
    }

    #[test]
    fn binary_and_decimal_suffixes_are_bytes() {
        for (text, want) in [
            ("1073741824", 1 << 30),
            ("1Ki", 1024),
            ("512Mi", 512 << 20),
            ("1Gi", 1 << 30),
            ("2Ti", 2 << 40),
            ("1Pi", 1 << 50),
            ("3Ei", 3 << 60),
            ("1k", 1_000),
            ("500M", 500_000_000),
            ("8G", 8_000_000_000),
            ("1T", 1_000_000_000_000),
            ("1P", 1_000_000_000_000_000),
            ("1E", 1_000_000_000_000_000_000),
            ("0", 0),
        ] {
            assert_eq!(bytes(text), want, "{text}");
        }
    }

    #[test]
    fn fractions_and_exponents_are_exact_and_round_up_to_a_byte() {
        for (text, want) in [
            ("1.5Gi", 3 << 29),
            (".5Ki", 512),
            ("2.", 2),
            ("1e9", 1_000_000_000),
            ("1E3", 1_000),
            ("15e-1", 2),
            ("0.1", 1),
            ("1e-400", 1),
            ("0e-400", 0),
            ("0e4000", 0),
            ("1e+3", 1_000),
        ] {
            assert_eq!(bytes(text), want, "{text}");
        }
    }

    #[test]
    fn the_same_size_written_two_ways_is_the_same_size_but_keeps_its_text() {
        let a = Quantity::parse("1024Mi").unwrap();
        let b = Quantity::parse("1Gi").unwrap();
        assert!(a.same_size(&b));
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "1024Mi");
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"1Gi\"");
        assert!(!a.same_size(&Quantity::parse("1G").unwrap()));
    }

    #[test]
    fn text_that_is_no_size_is_refused_with_the_way_to_write_one() {
        for bad in [
            "", "Gi", "1gi", "1GB", "1.2.3Gi", "-1Gi", "1 Gi", "1e", "1e+", "1m", "1Gi ", "e3", ".",
        ] {
            let e = Quantity::parse(bad).unwrap_err();
            assert!(
                e.contains("is not a size") && e.contains("e.g. 1Gi"),
                "{bad:?}: {e}"
            );
            assert!(Quantity::read(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn sizes_past_16_eib_are_refused_naming_the_limit() {
        assert_eq!(bytes("18446744073709551615"), u64::MAX);
        assert_eq!(bytes("15Ei"), 15 << 60);
        for big in [
            "18446744073709551616",
            "16Ei",
            "1e20",
            "99999999999999999999999999999999999999999Gi",
            "1e4000",
        ] {
            let e = Quantity::parse(big).unwrap_err();
            assert!(
                e.contains("larger than the largest size (16 EiB)"),
                "{big:?}: {e}"
            );
        }
    }
}
