//! report.html: report.md on one self-contained page (tables, the
//! machine, the figures embedded as data URIs), to open from a file://
//! URL. A small script marks each figure loaded or not, in the page's DOM
//! (`data-figures="3 of 3 loaded"` on the body), which a browser test
//! reads.

use std::path::Path;

use base64::Engine as _;
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// Its file name in a sweep directory.
pub const FILE: &str = "report.html";

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #bbb;padding:3px 8px;text-align:left}\
th{background:#eee}tr:nth-child(even) td{background:#f8f8f8}img{max-width:100%;height:auto;border:1px solid #ddd}\
code{background:#f2f2f2;padding:0 3px}";

const CHECK: &str = "window.addEventListener('load',function(){var im=document.images,ok=0;\
for(var i=0;i<im.length;i++){var l=im[i].complete&&im[i].naturalWidth>0;\
im[i].setAttribute('data-loaded',l?'yes':'no');if(l)ok++;}\
document.body.setAttribute('data-figures',ok+' of '+im.length+' loaded');});";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A figure of `dir` as a data URI (None: not a figure file of the
/// directory, or unreadable; the link is left as it is).
fn embedded(dir: &Path, url: &str) -> Option<String> {
    let mime = match url.rsplit_once('.')?.1 {
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => return None,
    };
    if url.contains('/') || url.contains(':') {
        return None;
    }
    let bytes = linerate_host::files::read_regular(&dir.join(url), 64 << 20, false).ok()??;
    Some(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// Whether a link of the report may point at `url`: http(s), or relative
/// (no scheme: no `javascript:`, `data:`, `file:`).
fn linkable(url: &str) -> bool {
    let u = url.trim_start().to_ascii_lowercase();
    match u.find([':', '/', '?', '#']) {
        Some(i) if u.as_bytes()[i] == b':' => u.starts_with("http:") || u.starts_with("https:"),
        _ => true,
    }
}

/// Text of the page: control, bidirectional and zero-width characters
/// shown as `\u{..}` ([`linerate_host::shown::shown_lines`]; line breaks kept);
/// the HTML writer then writes `<`, `>`, `&` and `"` as entities.
fn seen(s: CowStr<'_>) -> CowStr<'_> {
    match linerate_host::shown::shown_lines(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => CowStr::from(o),
    }
}

/// The page of report `md` of sweep directory `dir`. What the Markdown
/// holds is text: raw HTML in it is shown as text, a link or image to
/// anything but http(s) or a relative address is left out (its text
/// kept); the figures of `dir` are embedded.
pub fn page(title: &str, md: &str, dir: &Path) -> String {
    // Per link or image open: whether it was kept (links and images nest).
    let mut open: Vec<bool> = Vec::new();
    let parser = Parser::new_ext(md, Options::ENABLE_TABLES).filter_map(move |e| match e {
        // Text as report.md holds it, with any hidden character (one
        // that came in other than through `md`) shown as `\u{..}`.
        Event::Html(s) | Event::InlineHtml(s) | Event::Text(s) => Some(Event::Text(seen(s))),
        Event::Code(s) => Some(Event::Code(seen(s))),
        Event::Start(Tag::HtmlBlock) => Some(Event::Start(Tag::Paragraph)),
        Event::End(TagEnd::HtmlBlock) => Some(Event::End(TagEnd::Paragraph)),
        Event::Start(Tag::Link { ref dest_url, .. }) => {
            let keep = linkable(dest_url);
            open.push(keep);
            keep.then_some(e)
        }
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = linkable(&dest_url);
            open.push(keep);
            let dest_url = embedded(dir, &dest_url).map_or(dest_url, CowStr::from);
            keep.then_some(Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => open.pop().unwrap_or(true).then_some(e),
        other => Some(other),
    });
    let mut body = String::new();
    html::push_html(&mut body, parser);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}<script>{CHECK}</script>\n</body>\n</html>\n",
        escape(&linerate_host::shown::shown(title))
    )
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn figures_are_embedded_and_tables_rendered() {
        let dir = std::env::temp_dir().join(format!("linerate-html-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("figure-1.svg"),
            "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
        )
        .unwrap();
        let md =
            "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![F](figure-1.svg)\n\n![G](missing.svg)\n";
        let p = page("T <1>", md, &dir);
        assert!(p.contains("<title>T &lt;1&gt;</title>"), "{p}");
        assert!(p.contains("<td>1</td>"), "{p}");
        assert!(p.contains("src=\"data:image/svg+xml;base64,PHN2Zy"), "{p}");
        // A figure not in the directory stays a link (and shows as not loaded).
        assert!(p.contains("src=\"missing.svg\""), "{p}");
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn hidden_characters_are_shown_as_escapes() {
        let dir = std::env::temp_dir().join(format!("linerate-html-hid-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // Raw in the Markdown (as no report writes it), in text, code, a
        // table and raw HTML: the page shows each as an escape.
        let md = "# T\u{202e}x\n\n| a |\n|---|\n| b\u{1b}[2J |\n\n`c\u{200b}` <i\u{2066}>\n";
        let p = page("T\u{202e}\u{9b}", md, &dir);
        for c in ['\u{202e}', '\u{1b}', '\u{200b}', '\u{2066}', '\u{9b}'] {
            assert!(!p.contains(c), "{c:?}: {p}");
        }
        for want in [
            "<title>T\\u{202e}\\u{9b}</title>",
            "<h1>T\\u{202e}x</h1>",
            "<td>b\\u{1b}[2J</td>",
            "<code>c\\u{200b}</code>",
            "&lt;i\\u{2066}&gt;",
        ] {
            assert!(p.contains(want), "{want}: {p}");
        }
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn raw_html_is_text_and_only_web_or_relative_links_are_kept() {
        let dir = std::env::temp_dir().join(format!("linerate-html-raw-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let md = "# <script>alert(1)</script>\n\n<div onclick=\"x\">block</div>\n\n\
            a <img src=x onerror=\"alert(2)\"> b\n\n\
            [web](https://example.org/) [rel](results.jsonl) [js](javascript:alert(3)) \
            [JS]( JavaScript:alert(4)) ![d](data:image/svg+xml;base64,AAAA) [file](file:///etc/passwd)\n";
        let p = page("T", md, &dir);
        let body = &p[p.find("<body>").unwrap()..p.find("<script>window").unwrap()];
        assert!(
            !body.contains("<script") && !body.contains("<img") && !body.contains("<div"),
            "{body}"
        );
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{body}"
        );
        assert!(
            body.contains("a &lt;img src=x onerror=\"alert(2)\"&gt; b"),
            "{body}"
        );
        assert!(
            body.contains("<a href=\"https://example.org/\">web</a>"),
            "{body}"
        );
        assert!(body.contains("<a href=\"results.jsonl\">rel</a>"), "{body}");
        // The others: their text, no link.
        for t in [" js ", " JS ", " d ", " file"] {
            assert!(body.contains(t), "{t}: {body}");
        }
        assert_eq!(body.matches("<a ").count(), 2, "{body}");
        assert!(
            !body.contains("javascript") && !body.contains("data:") && !body.contains("file:"),
            "{body}"
        );
        for (url, ok) in [
            ("figure-1.svg", true),
            ("http://x", true),
            ("HTTPS://x", true),
            ("#top", true),
            ("a/b:c", true),
            ("javascript:x", false),
            ("java\tscript:x", false),
            ("vbscript:x", false),
            ("data:text/html,x", false),
        ] {
            assert_eq!(linkable(url), ok, "{url:?}");
        }
        let _ = fs::remove_dir_all(dir);
    }
}
