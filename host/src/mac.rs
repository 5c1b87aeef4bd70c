//! A MAC address as options, the agent's API and its answers write it.

use serde::{Deserialize, Serialize};

/// A MAC address, written and read as aa:bb:cc:dd:ee:ff (six pairs of
/// hex digits, nothing else): a request or an answer holding anything
/// else is refused where it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Mac(pub [u8; 6]);

impl std::str::FromStr for Mac {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut mac = [0u8; 6];
        let mut parts = s.split(':');
        let pair = |p: Option<&str>| {
            p.filter(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        };
        for b in mac.iter_mut() {
            *b = pair(parts.next()).ok_or_else(|| Self::refusal(s))?;
        }
        match parts.next() {
            None => Ok(Self(mac)),
            Some(_) => Err(Self::refusal(s)),
        }
    }
}

impl Mac {
    fn refusal(s: &str) -> String {
        format!(
            "{} is not a MAC address: give six pairs of hex digits, aa:bb:cc:dd:ee:ff",
            crate::shown::shown_quoted(s)
        )
    }
}

impl TryFrom<String> for Mac {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Mac> for String {
    fn from(m: Mac) -> Self {
        m.to_string()
    }
}

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}
