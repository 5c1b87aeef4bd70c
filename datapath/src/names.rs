//! Interface and network-namespace names, checked as the kernel and
//! iproute2 check them. A name is a name, never a path: every name that
//! reaches a file path (`/run/netns/NAME`, `/sys/class/net/NAME/...`) or
//! another program's arguments goes through these checks first.

use thiserror::Error;

/// IFNAMSIZ: an interface name is at most 15 bytes (plus the NUL).
pub const IFNAMSIZ: usize = 16;
/// NAME_MAX: a namespace name is one file name under /run/netns.
pub const NETNS_NAME_MAX: usize = 255;

/// Why a name was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum NameError {
    /// An interface name the kernel would refuse (`dev_valid_name`).
    #[error(
        "{name:?} is not an interface name: {why} (names are 1-15 bytes, without '/', ':', \
         whitespace or control characters, and not \".\" or \"..\"; see `ip link`)"
    )]
    Iface {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A namespace name `ip netns` would refuse, or a path.
    #[error(
        "{name:?} is not a network namespace name: {why} (a name as `ip netns list` shows it, \
         never a path; see `ip netns list`)"
    )]
    Netns {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Checks an interface name as the kernel's `dev_valid_name` does, and
/// refuses control characters besides (no interface of ours has them, and
/// they would garble every message that names it).
pub fn check_iface(name: &str) -> Result<(), NameError> {
    let bad = |why| {
        Err(NameError::Iface {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() >= IFNAMSIZ {
        return bad("it is longer than 15 bytes");
    }
    if name == "." || name == ".." {
        return bad("it is a directory name");
    }
    if name.contains('/') {
        return bad("it contains '/'");
    }
    if name.contains(':') {
        return bad("it contains ':'");
    }
    if name.chars().any(char::is_whitespace) {
        return bad("it contains whitespace");
    }
    if name.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    Ok(())
}

/// Checks a network namespace name as `ip netns` does (one file name
/// under /run/netns: no '/', not "." or ".."), and refuses the empty name,
/// NUL and control characters.
pub fn check_netns(name: &str) -> Result<(), NameError> {
    let bad = |why| {
        Err(NameError::Netns {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > NETNS_NAME_MAX {
        return bad("it is longer than 255 bytes");
    }
    if name == "." || name == ".." {
        return bad("it is a directory name");
    }
    if name.contains('/') {
        return bad("it contains '/'");
    }
    if name.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names() {
        // The kernel takes shell metacharacters in a name: harmless, since
        // no name ever reaches a shell.
        for ok in ["lr-a0", "eth0", "q", "a.b", "x-123456789012", "q;id>pw;#"] {
            assert_eq!(check_iface(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../eth0",
            "a b",
            "a\tb",
            "eth0:1",
            "0123456789abcdef",
            "a\nb",
        ] {
            assert!(check_iface(bad).is_err(), "{bad:?} accepted");
        }
        // 15 bytes is the longest name.
        assert_eq!(check_iface("0123456789abcde"), Ok(()));
        let e = check_iface("a/b").unwrap_err().to_string();
        assert!(e.contains("contains '/'"), "{e}");
    }

    #[test]
    fn namespace_names() {
        for ok in ["lr-a", "rp-b", "ns with space", "ns.1"] {
            assert_eq!(check_netns(ok), Ok(()), "{ok}");
        }
        let long = "n".repeat(256);
        for bad in [
            "",
            ".",
            "..",
            "../netns/rp-a",
            "/run/netns/rp-a",
            "../../proc/1/ns/net",
            "a\0b",
            long.as_str(),
        ] {
            assert!(check_netns(bad).is_err(), "{bad:?} accepted");
        }
    }
}
