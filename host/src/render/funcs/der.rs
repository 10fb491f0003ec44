//! The little DER (ASN.1) and PEM that certificate generation needs:
//! writing the elements of an X.509 certificate and reading back the
//! subject and key identifier of a CA certificate.

/// A DER element with `tag` around `content`.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of already encoded elements.
pub fn sequence(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A SET of already encoded elements.
pub fn set(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

/// A non-negative INTEGER from big-endian magnitude bytes.
pub fn unsigned_integer(magnitude: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = magnitude.iter().copied().skip_while(|b| *b == 0).collect();
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(&trimmed);
    tlv(0x02, &content)
}

/// An OBJECT IDENTIFIER.
pub fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut content = Vec::new();
    let mut arcs = arcs.iter().copied();
    let first = arcs.next().unwrap_or(0) * 40 + arcs.next().unwrap_or(0);
    for arc in std::iter::once(first).chain(arcs) {
        let mut groups = vec![(arc & 0x7f) as u8];
        let mut rest = arc >> 7;
        while rest > 0 {
            groups.push((rest & 0x7f) as u8 | 0x80);
            rest >>= 7;
        }
        groups.reverse();
        content.extend_from_slice(&groups);
    }
    tlv(0x06, &content)
}

/// NULL.
pub fn null() -> Vec<u8> {
    vec![0x05, 0x00]
}

/// BOOLEAN TRUE.
pub fn true_value() -> Vec<u8> {
    vec![0x01, 0x01, 0xff]
}

/// A BIT STRING with `unused` bits at the end of the last byte.
pub fn bit_string(bytes: &[u8], unused: u8) -> Vec<u8> {
    let mut content = vec![unused];
    content.extend_from_slice(bytes);
    tlv(0x03, &content)
}

/// An OCTET STRING.
pub fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(0x04, bytes)
}

/// A string as Go's `asn1.Marshal` writes it: PrintableString when every
/// character allows it (including `*`), UTF8String otherwise.
pub fn directory_string(s: &str) -> Vec<u8> {
    let printable = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " '()+,-./:=?*".contains(c));
    tlv(if printable { 0x13 } else { 0x0c }, s.as_bytes())
}

/// A context-specific constructed (explicit) tag around an element.
pub fn explicit(tag: u8, inner: &[u8]) -> Vec<u8> {
    tlv(0xa0 | tag, inner)
}

/// One element read from DER: its tag, its content, and the whole element.
pub struct Element<'a> {
    /// The tag byte.
    pub tag: u8,
    /// The content bytes.
    pub content: &'a [u8],
    /// The element including tag and length.
    pub raw: &'a [u8],
}

/// Reads the element at the start of `der`.
pub fn read(der: &[u8]) -> Option<(Element<'_>, &[u8])> {
    let tag = *der.first()?;
    let first = *der.get(1)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let bytes = der.get(2..2 + n)?;
        (
            bytes
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b)),
            2 + n,
        )
    };
    let end = header.checked_add(len)?;
    let content = der.get(header..end)?;
    Some((
        Element {
            tag,
            content,
            raw: &der[..end],
        },
        &der[end..],
    ))
}

/// All elements inside `content`.
pub fn children(mut content: &[u8]) -> Option<Vec<Element<'_>>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (element, rest) = read(content)?;
        out.push(element);
        content = rest;
    }
    Some(out)
}

/// Go's `pem.Encode`: base64 in lines of 64 characters.
pub fn pem(label: &str, der: &[u8]) -> String {
    let body = super::encoding::base64_encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The label and bytes of the first PEM block in `text`.
pub fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("-----BEGIN ")?;
    let after = &text[start + 11..];
    let label_end = after.find("-----")?;
    let label = after[..label_end].to_string();
    let body_start = &after[label_end + 5..];
    let end = body_start.find(&format!("-----END {label}-----"))?;
    let body: String = body_start[..end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = super::encoding::base64_decode(&body).ok()?;
    Some((label, der))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_der_elements() {
        assert_eq!(
            oid(&[1, 2, 840, 113549, 1, 1, 11]),
            vec![
                0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b
            ]
        );
        assert_eq!(unsigned_integer(&[0x80]), vec![0x02, 0x02, 0x00, 0x80]);
        assert_eq!(unsigned_integer(&[0x00, 0x01]), vec![0x02, 0x01, 0x01]);
        assert_eq!(tlv(0x04, &[0; 200])[..3], [0x04, 0x81, 200]);
        assert_eq!(directory_string("*.example.com")[0], 0x13);
        assert_eq!(directory_string("a&b")[0], 0x0c);
        let encoded = sequence(&[null(), true_value()]);
        let Some((element, rest)) = read(&encoded) else {
            panic!("unreadable")
        };
        assert!(rest.is_empty());
        assert_eq!(children(element.content).map(|c| c.len()), Some(2));
    }

    #[test]
    fn pem_round_trips() {
        let text = pem("TEST", &[1, 2, 3]);
        assert_eq!(text, "-----BEGIN TEST-----\nAQID\n-----END TEST-----\n");
        assert_eq!(pem_decode(&text), Some(("TEST".into(), vec![1, 2, 3])));
    }
}
