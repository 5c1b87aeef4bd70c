//! The shared token: read from a file (mode 600) or LINERATE_TOKEN, and
//! compared in constant time.

use std::{os::unix::fs::PermissionsExt, path::Path};

use thiserror::Error;

use linerate_host::files::{self, FileError, Trust};

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
    /// Refused as a file: another user's, writable by others, too large,
    /// reached through a link not root's alone.
    #[error("token file {0}")]
    File(#[from] FileError),
    /// Others may read the file.
    #[error("token file {path} is readable by others (mode {mode:o}): `chmod 600 {}`", linerate_host::sh::quote(.path))]
    Open {
        /// The file.
        path: String,
        /// Its mode.
        mode: u32,
    },
    /// A directory, a device, a socket...
    #[error("token file {path} is a directory: give the file holding the token (mode 600)")]
    Directory {
        /// The path.
        path: String,
    },
    /// Not a regular file.
    #[error("token file {path} is not a regular file: give a file holding the token (mode 600)")]
    NotFile {
        /// The path.
        path: String,
    },
    /// A second line, a space, a control or non-ASCII character.
    #[error("the token {from} contains {what} (at byte {at}): a token is one line of printable ASCII without spaces (one trailing newline is fine), e.g. `openssl rand -hex 32`")]
    Unprintable {
        /// Where it came from.
        from: String,
        /// What it contains.
        what: &'static str,
        /// Where.
        at: usize,
    },
    /// Empty or too short.
    #[error("the token {from} is shorter than 16 characters: use a long random one, e.g. `openssl rand -hex 32`")]
    Short {
        /// Where it came from.
        from: String,
    },
}

/// The most of a token file read: a token is one line (`openssl rand -hex
/// 32` writes 65 bytes); a larger file is refused from its size, unread.
pub const MAX_TOKEN_FILE: u64 = 4096;

/// Reads the token from `file`, or else from LINERATE_TOKEN. The file is
/// read as `files::read_input` reads what linerate acts on with its user's
/// authority: a regular file of at most [`MAX_TOKEN_FILE`] bytes, the
/// user's or root's, written and read by no one else, through a link only
/// where root alone owns every component (a Kubernetes Secret).
pub fn read(file: Option<&Path>) -> Result<String, TokenError> {
    let (token, from) = match file {
        Some(p) => {
            let path = p.display().to_string();
            // (stat for the messages: a directory, a device, a FIFO are
            // named before anything is opened.)
            let meta = std::fs::metadata(p).map_err(|source| TokenError::Read {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                return Err(TokenError::Directory { path });
            }
            if !meta.is_file() {
                return Err(TokenError::NotFile { path });
            }
            let (bytes, meta) = files::read_input_meta(p, MAX_TOKEN_FILE, Trust::Mine)?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(TokenError::Open { path, mode });
            }
            let text = String::from_utf8(bytes).map_err(|e| TokenError::Read {
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?;
            (text, format!("in {path}"))
        }
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) => (t, format!("in {TOKEN_ENV}")),
            Err(_) => return Err(TokenError::Missing),
        },
    };
    let token = one_line(&token, &from)?.to_string();
    if token.len() < 16 {
        return Err(TokenError::Short { from });
    }
    Ok(token)
}

/// The token without its one trailing newline; refused when anything but
/// printable ASCII without spaces is left (a second line would make a
/// token the agent starts with and no client can send).
fn one_line<'a>(text: &'a str, from: &str) -> Result<&'a str, TokenError> {
    let t = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    if let Some((at, c)) = t.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        let what = match c {
            '\n' | '\r' => "a line break",
            ' ' => "a space",
            '\t' => "a tab",
            c if c.is_control() => "a control character",
            _ => "a non-ASCII character",
        };
        return Err(TokenError::Unprintable {
            from: from.to_string(),
            what,
            at,
        });
    }
    Ok(t)
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

    #[test]
    fn directory_refused() {
        let dir = std::env::temp_dir().join(format!("lr-token-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = read(Some(&dir)).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_line_only() {
        let ok = |t| one_line(t, "in T").map(str::to_string);
        assert_eq!(ok("0123456789abcdef\n").unwrap(), "0123456789abcdef");
        assert_eq!(ok("0123456789abcdef\r\n").unwrap(), "0123456789abcdef");
        assert_eq!(ok("0123456789abcdef").unwrap(), "0123456789abcdef");
        for (t, what) in [
            ("01234567\n89abcdef\n", "a line break"),
            ("0123456789abcdef\n\n", "a line break"),
            ("01234567 89abcdef", "a space"),
            (" 0123456789abcdef", "a space"),
            ("01234567\t89abcdef", "a tab"),
            ("01234567\u{1}89abcdef", "a control character"),
            ("01234567é89abcdef", "a non-ASCII character"),
        ] {
            let e = ok(t).unwrap_err().to_string();
            assert!(e.contains(what), "{t:?}: {e}");
        }
    }

    #[test]
    fn large_or_foreign_token_files_refused_unread() {
        let dir = std::env::temp_dir().join(format!("lr-token-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A sparse 1 GiB file: refused from its size, not read.
        let big = dir.join("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(1 << 30).unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = read(Some(&big)).unwrap_err().to_string();
        assert!(
            e.ends_with("big: is larger than the 4096 bytes linerate reads of it"),
            "{e}"
        );
        // Root-only but another user's: not sent for this user.
        let theirs = dir.join("theirs");
        std::fs::write(&theirs, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(Some(&theirs)).unwrap(), "0123456789abcdef0123");
        if nix::unistd::geteuid().is_root() {
            nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let e = read(Some(&theirs)).unwrap_err().to_string();
            assert!(e.contains("theirs: belongs to uid 65534"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
