//! Text from outside (a client, an agent's answer, a child process, a
//! file, the kernel) as linerate writes it anywhere: the one rule of which
//! characters are never written as they are, and each sink's escaping.
//!
//! - terminal and logs: [`shown`] (and [`shown_lines`] for a message of
//!   several lines), every hidden character written as `\u{..}`;
//! - Markdown (report.md, compare.md): `sweep::report::md`, through
//!   [`shown`]; HTML (report.html): `sweep::report::html`, its text
//!   through [`shown_lines`], then entities;
//! - Prometheus exposition (`/metrics`): [`prometheus_label`];
//! - YAML (`fleet prometheus`): values quoted by the serializer, comments
//!   through [`yaml_comment`].

use std::borrow::Cow;

/// Whether `c` is never written as it is: control characters (C0, DEL,
/// C1; ESC starts a terminal's escape sequence, a `\n` would forge a line
/// in a log), line and paragraph separators, Unicode's bidirectional
/// controls (U+202E turns the text after it around on screen) and
/// zero-width characters (text that looks like other text).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}')
        || ('\u{200B}'..='\u{200F}').contains(&c)
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2060}'..='\u{2064}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `s` with every character `escaped` picks written as `\u{..}`.
fn escaped(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escape(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text from outside as linerate prints and logs it: every character
/// [`hidden`] would hide written as `\u{..}`, everything else as it is.
pub fn shown(s: &str) -> Cow<'_, str> {
    escaped(s, hidden)
}

/// [`shown`] in double quotes.
pub fn shown_quoted(s: &str) -> String {
    format!("\"{}\"", shown(s))
}

/// A message of several lines (an error whose parts quote a file) as
/// [`shown`], its line breaks kept: each line is one of the message's.
pub fn shown_lines(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c != '\n' && hidden(c))
}

/// A label value of the Prometheus (and OpenMetrics) text exposition:
/// `\`, `"` and a line break escaped as the format says (`\\`, `\"`,
/// `\n`); the value is otherwise the label's own, as queries name it.
pub fn prometheus_label(s: &str) -> Cow<'_, str> {
    if !s.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text in a YAML comment: on its line, whatever it holds (every line
/// break YAML knows, `\n`, `\r`, U+0085, U+2028 and U+2029, is hidden and
/// written as `\u{..}`).
pub fn yaml_comment(s: &str) -> Cow<'_, str> {
    shown(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the hostile user planted: an agent's version that clears the
    /// screen and retitles the terminal, then turns the text around.
    const VERSION: &str = "\u{1b}[2J\u{1b}]0;owned\u{7}\u{202e}";

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

    #[test]
    fn the_terminal_sees_no_escape_sequence_c1_bidi_or_zero_width() {
        assert_eq!(shown(VERSION), "\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{202e}");
        // C1 (U+009B is a terminal's CSI on its own), zero-width, BOM.
        assert_eq!(
            shown("a\u{9b}2Jb\u{200b}c\u{200d}\u{2060}\u{feff}"),
            "a\\u{9b}2Jb\\u{200b}c\\u{200d}\\u{2060}\\u{feff}"
        );
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2067}', '\u{2069}',
        ] {
            assert_eq!(shown(&c.to_string()), format!("\\u{{{:x}}}", u32::from(c)));
        }
        let out = shown(VERSION);
        assert!(!out.chars().any(hidden), "{out}");
        // Several lines stay several lines; nothing else is let through.
        assert_eq!(
            shown_lines("line 1\nline 2\u{1b}[2J\r\u{202e}"),
            "line 1\nline 2\\u{1b}[2J\\u{d}\\u{202e}"
        );
    }

    #[test]
    fn prometheus_label_values_are_escaped_as_the_format_says() {
        assert_eq!(prometheus_label("lr-b0"), "lr-b0");
        assert_eq!(prometheus_label("hx\"q0"), "hx\\\"q0");
        assert_eq!(prometheus_label("a\\b\nc"), "a\\\\b\\nc");
    }

    #[test]
    fn a_yaml_comment_holds_no_line_break() {
        let path = "a\nglobal: {scrape_interval: 1h}\n#.toml";
        let c = yaml_comment(path);
        assert_eq!(c, "a\\u{a}global: {scrape_interval: 1h}\\u{a}#.toml");
        for s in ["a\rb", "a\u{85}b", "a\u{2028}b", "a\u{2029}b"] {
            let c = yaml_comment(s);
            assert!(
                !c.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']),
                "{c}"
            );
        }
    }
}
