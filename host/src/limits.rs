//! The bounds options are checked against, shared by the CLI's parsers
//! and the code that acts on them (the lab, the path plan): constants and
//! name rules only, so that every layer may read them.

/// Largest MTU the lab sets (veth's own limit is higher, AF_XDP
/// multi-buffer and the steering program are tested to 9000).
pub const MAX_MTU: u32 = 9000;
/// Smallest MTU IPv4 allows.
pub const MIN_MTU: u32 = 576;

/// The smallest MTU that carries IPv6 (RFC 8200): the lab has IPv6
/// addresses at this MTU and above.
pub const IPV6_MIN_MTU: u32 = 1280;

/// Largest ring the workers accept.
pub const MAX_RING: u32 = 16384;

/// A lab name: 1 to 8 letters, digits or '-' (its interfaces' names are
/// the name and 3 more characters, within the kernel's 15).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 8
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(format!(
            "lab name {name:?} is invalid: use 1 to 8 letters, digits or '-'"
        ));
    }
    Ok(())
}
