//! Text from a sweep file, a record or an agent, as Markdown that shows
//! it as it is: never HTML, a link, emphasis or a table's column. Every
//! piece of such text enters report.md, compare.md and the rfc2544
//! report.md through here.

/// `s` as inline Markdown text: `<` and `&` as entities (report.md holds
/// no tag or entity from such text), Markdown's punctuation (`|` of a
/// table cell too) escaped with a backslash, line breaks, other control
/// characters, bidirectional and zero-width ones shown as `\u{..}`
/// ([`linerate_host::shown::shown`]).
pub fn text(s: &str) -> String {
    let s = linerate_host::shown::shown(s);
    let mut o = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // An `_` inside a word (tx_wait) opens no emphasis: left as it is.
        let inside = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '<' => o.push_str("&lt;"),
            '&' => o.push_str("&amp;"),
            '_' if inside(i.checked_sub(1)) && inside(Some(i + 1)) => o.push(c),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                o.push('\\');
                o.push(c);
            }
            c => o.push(c),
        }
    }
    o
}

/// `s` as a code span, outside a table: shown literally (a code span's
/// text is never HTML), fenced by more backticks than it holds in a row;
/// control, bidirectional and zero-width characters shown as `\u{..}`.
pub fn code(s: &str) -> String {
    let s = linerate_host::shown::shown(s);
    let mut run = 0;
    let mut longest = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulldown_cmark::{html, Options, Parser};

    fn render(md: &str) -> String {
        let mut o = String::new();
        html::push_html(&mut o, Parser::new_ext(md, Options::ENABLE_TABLES));
        o
    }

    #[test]
    fn text_is_shown_as_it_is() {
        let hostile = "<img src=x onerror=\"alert(1)\"> *a* _b_ [l](javascript:x) `c` a|b \\ # &lt; ~~s~~ ![i](x)\nnext";
        let t = text(hostile);
        assert!(!t.contains('<') && !t.contains('\n'), "{t}");
        // In a table cell: one cell, the text as it was (the line break a space).
        let page = render(&format!("| h |\n|---|\n| {t} |\n"));
        let want = "<td>&lt;img src=x onerror=\"alert(1)\"&gt; *a* _b_ [l](javascript:x) `c` a|b \\ # &amp;lt; ~~s~~ ![i](x)\\u{a}next</td>";
        assert!(page.contains(want), "{page}");
        assert!(!page.contains("<img") && !page.contains("<a ") && !page.contains("<em>"));
        // Plain words stay as they are.
        assert_eq!(
            text("busy sender, 8 KB (1.5 %) -> tx_wait"),
            "busy sender, 8 KB (1.5 %) -> tx_wait"
        );
        assert_eq!(text("_a_ b_ a__b"), "\\_a\\_ b\\_ a\\_\\_b");
    }

    #[test]
    fn hidden_characters_are_shown_as_escapes() {
        let cpu = "Xeon\u{202e}0032 gpj\u{1b}[2J\u{200b}";
        for md in [text(cpu), code(cpu)] {
            let page = render(&format!("- {md}\n"));
            assert!(
                page.contains("Xeon\\u{202e}0032 gpj\\u{1b}[2J\\u{200b}"),
                "{page}"
            );
            assert!(!page.contains(['\u{202e}', '\u{1b}', '\u{200b}']), "{page}");
        }
    }

    #[test]
    fn code_spans_hold_any_text() {
        for s in ["plain", "a`b", "``x", "x`", "<script>a|b</script>"] {
            let c = code(s);
            let page = render(&format!("- axis {c}: 1\n"));
            let shown = s.replace('<', "&lt;").replace('>', "&gt;");
            assert!(
                page.contains(&format!("<li>axis <code>{shown}</code>: 1</li>")),
                "{s}: {page}"
            );
        }
    }
}
