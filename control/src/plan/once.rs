//! The parsed options stop at the plan (issue 33, item 4): outside the
//! options themselves, the typed request, the plans and each command's
//! entry point, no file of the binary names `StreamArgs`, `RrArgs` or
//! `RunArgs` (`#[cfg(test)]` items left out: tests build plans from
//! command lines). The check plants a violation in a copy of the sources
//! and sees it found.

use std::collections::BTreeMap;
use std::path::Path;

/// The parsed options' types.
const PARSED: [&str; 3] = ["StreamArgs", "RrArgs", "RunArgs"];

/// The files (relative to `control/src`) that may name them: the options,
/// the typed run request, the plans, and the entry points of the commands
/// that take them.
const ALLOWED: [&str; 6] = [
    "cli.rs",
    "request.rs",
    "plan/",
    "stream/command.rs",
    "rr/command.rs",
    "rfc2544/mod.rs",
];

/// The program's text of a source: comments, string and char literals
/// blanked, `#[cfg(test)]` items removed.
fn program_text(source: &str) -> String {
    let code = without_literals(source);
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = find_cfg_test(rest) {
        out.push_str(&rest[..at.0]);
        rest = &rest[skip_item(rest, at.1)..];
    }
    out.push_str(rest);
    out
}

/// Comments and literals replaced by spaces (a brace or a name in a
/// string is not code).
fn without_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // r"..." or r#"..."#
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A char literal ('{', '\n', '\''); a lifetime has no closing quote.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where the next `#[cfg(test)]` starts and ends in `code`.
fn find_cfg_test(code: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(hash) = code[from..].find("#[").map(|i| i + from) {
        let close = code[hash..].find(']').map(|i| i + hash + 1)?;
        let attr: String = code[hash..close]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if attr == "#[cfg(test)]" {
            return Some((hash, close));
        }
        from = close;
    }
    None
}

/// The end of the item that starts at `from`: its `;`, or the brace that
/// closes its body.
fn skip_item(code: &str, from: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code[from..].char_indices() {
        match c {
            ';' if depth == 0 => return from + i + 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return from + i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Whether `text` has `name` as a whole word.
fn names(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(word)
            && !text[at + name.len()..].chars().next().is_some_and(word)
    })
}

/// Every file (relative path -> source) outside [`ALLOWED`] that names a
/// parsed options' type, with the types it names.
fn violations(files: &BTreeMap<String, String>) -> Vec<String> {
    files
        .iter()
        .filter(|(file, _)| !ALLOWED.iter().any(|a| file.starts_with(a)))
        .filter_map(|(file, source)| {
            let text = program_text(source);
            let named: Vec<&str> = PARSED.into_iter().filter(|n| names(&text, n)).collect();
            (!named.is_empty()).then(|| format!("{file} names {}", named.join(", ")))
        })
        .collect()
}

/// control/src's files: relative path (`/`-separated) -> source.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("control/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("below src");
                let rel: Vec<String> = rel
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.insert(rel.join("/"), text);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&src, &src, &mut out);
    out
}

#[test]
fn the_parsed_options_stop_at_the_plan() {
    let files = sources();
    assert!(
        files.contains_key("session/mod.rs") && files.contains_key("plan/stream.rs"),
        "control/src read: {:?}",
        files.keys().collect::<Vec<_>>()
    );
    // The allowed files do name them (else the list is longer than true).
    for allowed in ALLOWED {
        assert!(
            files
                .iter()
                .filter(|(f, _)| f.starts_with(allowed))
                .any(|(_, s)| PARSED.iter().any(|n| names(&program_text(s), n))),
            "{allowed} names none of {PARSED:?}: drop it from ALLOWED"
        );
    }
    assert_eq!(violations(&files), Vec::<String>::new());
}

#[test]
fn a_planted_violation_is_found() {
    let mut files = sources();
    let plant = |files: &mut BTreeMap<String, String>, file: &str, code: &str| {
        files.get_mut(file).expect("the file exists").push_str(code);
    };
    // In the session's code: found.
    plant(
        &mut files,
        "session/mod.rs",
        "\nfn planted(_: &crate::cli::RunArgs) {}\n",
    );
    // A path's check of a stream's options, inside a function's body.
    plant(
        &mut files,
        "path.rs",
        "\nfn planted() { let _ = |a: &crate::cli::StreamArgs| a.rx_only; }\n",
    );
    // In a test item, a comment, a string, or an allowed file: not found.
    plant(
        &mut files,
        "engine/mod.rs",
        "\n#[cfg(test)]\nmod planted { fn f(_: &crate::cli::RrArgs) { let _ = '{'; } }\n// RrArgs\nconst S: &str = \"RrArgs {\";\n",
    );
    plant(
        &mut files,
        "plan/rr.rs",
        "\nfn planted(_: &crate::cli::RrArgs) {}\n",
    );
    assert_eq!(
        violations(&files),
        vec![
            "path.rs names StreamArgs".to_string(),
            "session/mod.rs names RunArgs".to_string(),
        ]
    );
}

#[test]
fn test_items_literals_and_comments_are_not_the_program() {
    let text = program_text(
        "use a::RunArgs;\n#[cfg(test)]\npub use b::StreamArgs;\n#[cfg(test)]\nmod t {\n    fn f() { let c = '}'; let s = \"{\"; }\n}\nfn g() -> r#\"RrArgs\"# {}\n/* RrArgs */ fn h<'a>(x: &'a RrArgs) {}\n",
    );
    assert!(names(&text, "RunArgs"), "{text}");
    assert!(!names(&text, "StreamArgs"), "{text}");
    // The one RrArgs left is h's parameter's type.
    assert_eq!(text.matches("RrArgs").count(), 1, "{text}");
    assert!(text.contains("fn h<'a>(x: &'a RrArgs)"), "{text}");
    assert!(!names("MyRunArgsX", "RunArgs"));
}
