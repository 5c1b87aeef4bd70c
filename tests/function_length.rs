//! No function in control, datapath or ebpf is longer than 120 lines
//! (issue 23, item 4). A function is counted from its `fn` line to its
//! closing brace at the same indentation (rustfmt's layout); trait method
//! declarations without a body are not functions here.

use std::path::{Path, PathBuf};

/// The longest a function may be, in lines.
const MAX_LINES: usize = 120;

/// Functions still longer than [`MAX_LINES`], as `file::name`. Pending: they
/// are being split on another branch; remove each entry when it is split.
const PENDING: &[&str] = &[];

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {dir:?}: {e}"));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The name of the function an item line declares (`pub(crate) async fn
/// name(` and the like), and the line's indentation.
fn fn_item(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    let mut rest = trimmed;
    if let Some(r) = rest.strip_prefix("pub") {
        rest = r.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        if let Some(r) = rest.strip_prefix(qualifier) {
            rest = r.trim_start();
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| (&rest[..end], indent))
}

/// The length in lines of the function whose `fn` line is `lines[start]`,
/// or `None` when it has no body (a trait method's declaration).
fn fn_length(lines: &[&str], start: usize, indent: &str) -> Option<usize> {
    let open = (start..lines.len()).find(|&i| lines[i].contains('{') || lines[i].ends_with(';'))?;
    let line = lines[open];
    if !line.contains('{') {
        return None;
    }
    if line.ends_with('}') && line.matches('{').count() == line.matches('}').count() {
        return Some(open - start + 1);
    }
    let close = format!("{indent}}}");
    let end = (open + 1..lines.len()).find(|&i| lines[i].trim_end() == close)?;
    Some(end - start + 1)
}

/// Every function longer than [`MAX_LINES`] in the three crates' sources, as
/// (`file::name`, lines, first line).
fn long_functions() -> Vec<(String, usize, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["control/src", "datapath/src", "ebpf/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut long = Vec::new();
    for file in files {
        let src =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file:?}: {e}"));
        let lines: Vec<&str> = src.lines().collect();
        let rel = file.strip_prefix(root).expect("under the root").display();
        for (i, line) in lines.iter().enumerate() {
            let Some((name, indent)) = fn_item(line) else {
                continue;
            };
            match fn_length(&lines, i, indent) {
                Some(n) if n > MAX_LINES => long.push((format!("{rel}::{name}"), n, i + 1)),
                _ => {}
            }
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_120_lines() {
    let long = long_functions();
    let over: Vec<String> = long
        .iter()
        .filter(|(name, _, _)| !PENDING.contains(&name.as_str()))
        .map(|(name, n, line)| format!("{name} (line {line}) is {n} lines"))
        .collect();
    assert!(
        over.is_empty(),
        "functions longer than {MAX_LINES} lines; split them by meaning:\n{}",
        over.join("\n")
    );
    let stale: Vec<&&str> = PENDING
        .iter()
        .filter(|p| !long.iter().any(|(name, _, _)| name == *p))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer over {MAX_LINES} lines: remove from PENDING: {stale:?}"
    );
}

#[test]
fn the_counter_measures_from_fn_line_to_closing_brace() {
    let src = "fn a() { 1 }\n\
               pub(crate) fn b(\n    x: u8,\n) -> u8 {\n    x\n}\n\
               trait T {\n    fn c(&self);\n    fn d(&self) {\n        if true {\n        }\n    }\n}\n";
    let lines: Vec<&str> = src.lines().collect();
    let found: Vec<(String, Option<usize>)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let (name, indent) = fn_item(l)?;
            Some((name.to_string(), fn_length(&lines, i, indent)))
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("a".to_string(), Some(1)),
            ("b".to_string(), Some(5)),
            ("c".to_string(), None),
            ("d".to_string(), Some(4)),
        ]
    );
}
