//! Sprig's password hashing and symmetric encryption: `bcrypt` and
//! `htpasswd` (bcrypt with Go's `$2a$` prefix and cost 10), and
//! `encryptAES`/`decryptAES` (AES-256-CBC with a random IV and PKCS#7
//! padding, the password zero-padded or cut to 32 bytes, base64 output).

use aes::Aes256;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};

use super::args::{exactly, text};
use super::encoding::{base64_decode, base64_encode};
use super::{FuncError, Function};
use crate::values::Value;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("bcrypt", bcrypt_hash),
    ("htpasswd", htpasswd),
    ("encryptAES", encrypt_aes),
    ("decryptAES", decrypt_aes),
];

/// Go's `bcrypt.GenerateFromPassword(password, 10)`, or Sprig's error text.
fn bcrypt_text(password: &str) -> String {
    if password.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match bcrypt::hash_with_result(password, 10) {
        Ok(parts) => parts.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn bcrypt_hash(args: &[Value]) -> Result<Value, FuncError> {
    let [password] = exactly::<1>("bcrypt", args)?;
    Ok(bcrypt_text(text(password)?).into())
}

/// `htpasswd USER PASSWORD`: `USER:<bcrypt hash>`.
fn htpasswd(args: &[Value]) -> Result<Value, FuncError> {
    let [user, password] = exactly::<2>("htpasswd", args)?;
    let user = text(user)?;
    if user.contains(':') {
        return Ok(format!("invalid username: {user}").into());
    }
    Ok(format!("{user}:{}", bcrypt_text(text(password)?)).into())
}

fn cipher_for(password: &str) -> Aes256 {
    let mut key = [0u8; 32];
    let bytes = password.as_bytes();
    let n = bytes.len().min(32);
    key[..n].copy_from_slice(&bytes[..n]);
    Aes256::new(&key.into())
}

/// `encryptAES PASSWORD TEXT`.
fn encrypt_aes(args: &[Value]) -> Result<Value, FuncError> {
    let [password, plain] = exactly::<2>("encryptAES", args)?;
    let (password, plain) = (text(password)?, text(plain)?);
    if plain.is_empty() {
        return Ok("".into());
    }
    let cipher = cipher_for(password);
    let mut content = plain.as_bytes().to_vec();
    let padding = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(padding as u8, padding));
    let mut out = vec![0u8; 16];
    getrandom::fill(&mut out).map_err(|e| FuncError::call(format!("reading random bytes: {e}")))?;
    let mut previous: [u8; 16] = [0; 16];
    previous.copy_from_slice(&out);
    for chunk in content.chunks(16) {
        let mut block = [0u8; 16];
        for (k, b) in block.iter_mut().enumerate() {
            *b = chunk[k] ^ previous[k];
        }
        let mut block = block.into();
        cipher.encrypt_block(&mut block);
        previous.copy_from_slice(&block);
        out.extend_from_slice(&previous);
    }
    Ok(base64_encode(&out).into())
}

/// `decryptAES PASSWORD BASE64`.
fn decrypt_aes(args: &[Value]) -> Result<Value, FuncError> {
    let [password, encrypted] = exactly::<2>("decryptAES", args)?;
    let (password, encrypted) = (text(password)?, text(encrypted)?);
    if encrypted.is_empty() {
        return Ok("".into());
    }
    let data = base64_decode(encrypted).map_err(FuncError::call)?;
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err(FuncError::call("crypto/cipher: input not full blocks"));
    }
    let cipher = cipher_for(password);
    let mut plain = Vec::with_capacity(data.len() - 16);
    for k in (16..data.len()).step_by(16) {
        let mut block: [u8; 16] = [0; 16];
        block.copy_from_slice(&data[k..k + 16]);
        let mut block = block.into();
        cipher.decrypt_block(&mut block);
        let decrypted: [u8; 16] = block.into();
        plain.extend(decrypted.iter().zip(&data[k - 16..k]).map(|(a, b)| a ^ b));
    }
    let padding = usize::from(*plain.last().unwrap_or(&0));
    if padding > plain.len() {
        return Err(FuncError::call(format!(
            "runtime error: slice bounds out of range [:{}]",
            plain.len() as i64 - padding as i64
        )));
    }
    plain.truncate(plain.len() - padding);
    Ok(String::from_utf8_lossy(&plain).into_owned().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_round_trips_and_matches_fips_197() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let cipher = Aes256::new(&key.into());
        let plain: [u8; 16] = std::array::from_fn(|i| (i as u8) * 0x11);
        let mut block = plain.into();
        cipher.encrypt_block(&mut block);
        let out: [u8; 16] = block.into();
        assert_eq!(hex::encode(out), "8ea2b7ca516745bfeafc49904b496089");
        let encrypted = encrypt_aes(&["secret".into(), "hello world, 17+b".into()]);
        let Ok(Value::String(encrypted)) = encrypted else {
            panic!("{encrypted:?}")
        };
        assert_eq!(
            decrypt_aes(&["secret".into(), encrypted.clone().into()]),
            Ok("hello world, 17+b".into())
        );
        assert_ne!(
            decrypt_aes(&["other".into(), encrypted.into()]),
            Ok("hello world, 17+b".into())
        );
        assert_eq!(encrypt_aes(&["k".into(), "".into()]), Ok("".into()));
        assert!(decrypt_aes(&["k".into(), "AAAA".into()]).is_err());
    }

    #[test]
    fn bcrypt_and_htpasswd() {
        let hashed = bcrypt_text("pw");
        assert!(
            hashed.starts_with("$2a$10$") && hashed.len() == 60,
            "{hashed}"
        );
        assert!(bcrypt::verify("pw", &hashed).unwrap_or(false));
        let line = htpasswd(&["user".into(), "pw".into()]);
        assert!(matches!(&line, Ok(Value::String(s)) if s.starts_with("user:$2a$10$")));
        assert_eq!(
            htpasswd(&["a:b".into(), "pw".into()]),
            Ok("invalid username: a:b".into())
        );
    }
}
