//! Text from outside (a client, a child process, a file) as linerate logs
//! and echoes it: control and bidirectional characters escaped.

/// Whether `c` is shown escaped: control characters (a `\n` would forge a
/// line in a log), line and paragraph separators, and Unicode's
/// bidirectional controls (U+202E turns the text after it around on
/// screen).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{2028}' | '\u{2029}'
        )
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Text a client or a child process supplied, as the agent logs and
/// echoes it: every character [`hidden`] would hide written as `\u{..}`,
/// everything else as it is.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`shown`] in double quotes.
pub fn shown_quoted(s: &str) -> String {
    format!("\"{}\"", shown(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_shown_escaped() {
        assert_eq!(shown("lr-b0"), "lr-b0");
        assert_eq!(shown("ünïcode ok"), "ünïcode ok");
        assert_eq!(
            shown("a\nlinerate: agent: forged"),
            "a\\u{a}linerate: agent: forged"
        );
        assert_eq!(shown("x\u{202e}gpj.exe"), "x\\u{202e}gpj.exe");
        assert_eq!(
            shown("\r\t\u{1b}[31m\u{200f}\u{2066}\u{2028}"),
            "\\u{d}\\u{9}\\u{1b}[31m\\u{200f}\\u{2066}\\u{2028}"
        );
        assert_eq!(shown_quoted("a\u{0}"), "\"a\\u{0}\"");
    }
}
