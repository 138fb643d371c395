//! The few DER elements of an X.509 certificate up to its subject: no X.509 crate for three
//! fields (the certificate-expiry metric and managed TLS's renewal read the validity; the
//! engine's identity move its client certificate's CN). Pure.

const SEQUENCE: u8 = 0x30;
/// `[0] EXPLICIT Version` of a TBSCertificate (absent for v1).
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// One DER element of `input`: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The TBSCertificate of a DER certificate from its field after the version and `skip` more.
fn tbs_field(der: &[u8], skip: usize) -> Option<&[u8]> {
    let (SEQUENCE, cert, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let mut rest = tbs;
    if element(rest)?.0 == VERSION {
        rest = element(rest)?.2;
    }
    for _ in 0..skip {
        rest = element(rest)?.2;
    }
    Some(rest)
}

/// `notBefore` and `notAfter` of a DER certificate (RFC 5280 4.1: Certificate ::= SEQUENCE {
/// tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity
/// SEQUENCE { notBefore, notAfter }, … }, … }), as Unix time.
pub fn validity(der: &[u8]) -> Option<(i64, i64)> {
    // serialNumber, signature, issuer
    let rest = tbs_field(der, 3)?;
    let (SEQUENCE, validity, _) = element(rest)? else {
        return None;
    };
    let (nb_tag, nb, after_not_before) = element(validity)?;
    let (na_tag, na, _) = element(after_not_before)?;
    Some((x509_time(nb_tag, nb)?, x509_time(na_tag, na)?))
}

const BIT_STRING: u8 = 0x03;

/// The raw bytes of the first element of `input` (tag and length included) and what follows.
fn raw_element(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let (_, _, rest) = element(input)?;
    Some((&input[..input.len() - rest.len()], rest))
}

/// The public key of a DER certificate: the subjectPublicKeyInfo's BIT STRING (RFC 5280 4.1:
/// after the validity comes the subject, then SubjectPublicKeyInfo ::= SEQUENCE { algorithm,
/// subjectPublicKey BIT STRING }), without its unused-bits byte.
fn public_key(der: &[u8]) -> Option<&[u8]> {
    // serialNumber, signature, issuer, validity, subject
    let rest = tbs_field(der, 5)?;
    let (SEQUENCE, spki, _) = element(rest)? else {
        return None;
    };
    let (_, _, after_algorithm) = element(spki)?;
    let (BIT_STRING, key, _) = element(after_algorithm)? else {
        return None;
    };
    key.strip_prefix(&[0])
}

/// Whether the CA certificate `ca` signed the certificate `leaf` (both DER): the leaf's
/// signature over its TBSCertificate checks with the CA's key. ECDSA P-256 with SHA-256 only,
/// what managed TLS issues (anything else is `false`: not a managed CA's). What a CA rotation
/// reads to know which CA a leaf is from, with nothing recorded beside the certificate.
pub fn signed_by(leaf: &[u8], ca: &[u8]) -> bool {
    let parts = || {
        let (SEQUENCE, cert, _) = element(leaf)? else {
            return None;
        };
        let (tbs, rest) = raw_element(cert)?;
        let (_, _, rest) = element(rest)?; // signatureAlgorithm
        let (BIT_STRING, sig, _) = element(rest)? else {
            return None;
        };
        Some((tbs, sig.strip_prefix(&[0])?, public_key(ca)?))
    };
    let Some((tbs, sig, key)) = parts() else {
        return false;
    };
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, key)
        .verify(tbs, sig)
        .is_ok()
}

const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// The attribute type commonName, 2.5.4.3.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// The subject's CN of a DER certificate (RFC 5280 4.1: after the validity comes the subject,
/// Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value }): the user etcd takes it for. Its
/// value as text, whatever string type carries it; `None` without one.
pub fn common_name(der: &[u8]) -> Option<String> {
    // serialNumber, signature, issuer, validity
    let rest = tbs_field(der, 4)?;
    let (SEQUENCE, mut rdns, _) = element(rest)? else {
        return None;
    };
    while !rdns.is_empty() {
        let (SET, set, next) = element(rdns)? else {
            return None;
        };
        let (SEQUENCE, attribute, _) = element(set)? else {
            return None;
        };
        let (OID, oid, value) = element(attribute)? else {
            return None;
        };
        if oid == COMMON_NAME {
            let (_, text, _) = element(value)?;
            return String::from_utf8(text.to_vec()).ok();
        }
        rdns = next;
    }
    None
}

/// `notAfter` of a DER certificate, as Unix time (see `validity`).
pub fn not_after(der: &[u8]) -> Option<i64> {
    validity(der).map(|(_, after)| after)
}

/// UTCTime (`YYMMDDHHMMSSZ`, 19YY from 50 on: RFC 5280 4.1.2.5.1) or GeneralizedTime
/// (`YYYYMMDDHHMMSSZ`), as Unix time.
fn x509_time(tag: u8, bytes: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(bytes).ok()?.strip_suffix('Z')?;
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let full = match (tag, s.len()) {
        (UTC_TIME, 12) => format!("{}{s}", if s < "50" { "20" } else { "19" }),
        (GENERALIZED_TIME, 14) => s.to_string(),
        _ => return None,
    };
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[0..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    );
    rfc3339
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
}
