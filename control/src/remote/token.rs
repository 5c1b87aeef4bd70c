//! The shared token: read from a file (mode 600) or LINERATE_TOKEN, and
//! compared in constant time.

use std::{os::unix::fs::PermissionsExt, path::Path};

use thiserror::Error;

/// Environment variable holding the token when no file is given.
pub const TOKEN_ENV: &str = "LINERATE_TOKEN";

/// Why no token could be had.
#[derive(Debug, Error)]
pub enum TokenError {
    /// Neither a file nor the variable.
    #[error("no token: give --token-file PATH (a file holding the agents' shared secret, mode 600) or set {TOKEN_ENV}")]
    Missing,
    /// The file cannot be read.
    #[error("cannot read token file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Others may read the file.
    #[error("token file {path} is readable by others (mode {mode:o}): `chmod 600 {path}`")]
    Open {
        /// The file.
        path: String,
        /// Its mode.
        mode: u32,
    },
    /// Empty or too short.
    #[error("the token {from} is shorter than 16 characters: use a long random one, e.g. `openssl rand -hex 32`")]
    Short {
        /// Where it came from.
        from: String,
    },
}

/// Reads the token from `file`, or else from LINERATE_TOKEN.
pub fn read(file: Option<&Path>) -> Result<String, TokenError> {
    let (token, from) = match file {
        Some(p) => {
            let path = p.display().to_string();
            let meta = std::fs::metadata(p).map_err(|source| TokenError::Read {
                path: path.clone(),
                source,
            })?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(TokenError::Open { path, mode });
            }
            let text = std::fs::read_to_string(p).map_err(|source| TokenError::Read {
                path: path.clone(),
                source,
            })?;
            (text.trim().to_string(), format!("in {path}"))
        }
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) => (t.trim().to_string(), format!("in {TOKEN_ENV}")),
            Err(_) => return Err(TokenError::Missing),
        },
    };
    if token.len() < 16 {
        return Err(TokenError::Short { from });
    }
    Ok(token)
}

/// Compares without stopping at the first difference.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare() {
        assert!(same(b"abcdefgh", b"abcdefgh"));
        assert!(!same(b"abcdefgh", b"abcdefgX"));
        assert!(!same(b"abc", b"abcd"));
    }

    #[test]
    fn open_file_refused() {
        let dir = std::env::temp_dir().join(format!("lr-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(read(Some(&f)), Err(TokenError::Open { .. })));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(Some(&f)).unwrap(), "0123456789abcdef0123");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
