//! The layers of `control` and `datapath` (issue 23, item 1), checked from
//! the code: every `use crate::…`, `super::…`, `self::…` path and every path
//! through a child module (`build::result` in `stream/mod.rs`), in `use`
//! items, expressions, types and macro arguments, is an edge from the file
//! that writes it to the file of the module it names (the longest prefix of
//! the path that is a module file). `#[cfg(test)]` items are left out: they
//! are not part of the program.
//!
//! Checked: no cycle between two files, no cycle between two folders (a
//! folder is the first segment of a module path: `stream`, `results`, or a
//! top-level file such as `lab`), no glob import of a sibling or parent
//! module (`use super::*`), and no edge from a lower layer into a higher
//! one, with the layers read from the table in `docs/architecture.md`.
//! `cargo test --test layers -- --nocapture` prints the counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module path below the crate root (`["stream", "build"]`).
type ModPath = Vec<String>;

/// One crate's module files and the edges between them.
struct Graph {
    /// Every module file: module path -> file, relative to the crate's `src`.
    files: BTreeMap<ModPath, String>,
    /// File -> files it imports from.
    edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
    /// `use super::*` and the like: (file, the glob's module).
    globs: Vec<(ModPath, ModPath)>,
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {dir:?}: {e}")) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to `src` (`stream/mod.rs` ->
/// `stream`, `main.rs` -> the root).
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "main" | "lib") {
        parts.push(stem.to_string());
    }
    parts
}

/// The crate's sources: module path -> (file name, source text).
fn sources(src: &Path) -> BTreeMap<ModPath, (String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(src).expect("below src");
            let text =
                std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {file:?}: {e}"));
            (module_of(rel), (rel.display().to_string(), text))
        })
        .collect()
}

/// Whether attributes say `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// Collects the paths one file writes, with the module they are written in.
struct Paths {
    /// The module the visitor is in (the file's, or an inline module's).
    module: ModPath,
    /// (module written in, path segments, is a glob).
    found: Vec<(ModPath, Vec<String>, bool)>,
}

impl Paths {
    fn push(&mut self, segments: Vec<String>, glob: bool) {
        if !segments.is_empty() {
            self.found.push((self.module.clone(), segments, glob));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                self.push(path, false);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                self.push(path, false);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone(), true),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    /// `crate :: a :: b` and the like inside macro arguments.
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            if let TokenTree::Group(g) = &tokens[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let mut path = Vec::new();
            let mut j = i;
            while let TokenTree::Ident(ident) = &tokens[j] {
                path.push(ident.to_string());
                let colons = matches!((tokens.get(j + 1), tokens.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':');
                if !colons || j + 3 >= tokens.len() {
                    break;
                }
                j += 3;
            }
            if path.len() > 1 && matches!(path[0].as_str(), "crate" | "super" | "self") {
                self.push(path, false);
                i = j + 1;
            } else {
                i += 1;
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test(attrs) {
            return;
        }
        match item {
            syn::Item::Use(u) => self.use_tree(&mut Vec::new(), &u.tree),
            syn::Item::Mod(m) if m.content.is_some() => {
                self.module.push(m.ident.to_string());
                syn::visit::visit_item(self, item);
                self.module.pop();
            }
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.push(
                path.segments.iter().map(|s| s.ident.to_string()).collect(),
                false,
            );
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

/// The absolute module path `segments` names when written in `module`, or
/// None when it names nothing of this crate (std, another crate, a local).
fn absolute(
    module: &[String],
    segments: &[String],
    modules: &BTreeMap<ModPath, String>,
) -> Option<ModPath> {
    let mut base: ModPath = module.to_vec();
    let mut rest = segments;
    match rest.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !modules.contains_key(&child) {
                return None;
            }
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module file an absolute path lands in: its longest prefix that is a
/// module file.
fn file_of(path: &[String], modules: &BTreeMap<ModPath, String>) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains_key(p))
        .expect("the root is a module")
}

/// The graph of a crate whose sources are `sources` (module -> (file, text)).
fn graph(sources: &BTreeMap<ModPath, (String, String)>) -> Graph {
    let files: BTreeMap<ModPath, String> = sources
        .iter()
        .map(|(m, (f, _))| (m.clone(), f.clone()))
        .collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    let mut globs = Vec::new();
    for (module, (file, text)) in sources {
        let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("parsing {file}: {e}"));
        let mut paths = Paths {
            module: module.clone(),
            found: Vec::new(),
        };
        paths.visit_file(&ast);
        let from = edges.entry(module.clone()).or_default();
        for (written_in, segments, glob) in paths.found {
            let Some(abs) = absolute(&written_in, &segments, &files) else {
                continue;
            };
            let to = file_of(&abs, &files);
            if glob && segments[0] != "crate" && files.contains_key(&abs) && abs != *module {
                globs.push((module.clone(), abs.clone()));
            }
            if to != *module {
                from.insert(to);
            }
        }
    }
    Graph {
        files,
        edges,
        globs,
    }
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        found: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        let i = s.index.len();
        s.index.insert(n.clone(), i);
        s.low.insert(n.clone(), i);
        s.stack.push(n.clone());
        s.on_stack.insert(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, edges, s);
                let low = s.low[n].min(s.low[m]);
                s.low.insert(n.clone(), low);
            } else if s.on_stack.contains(m) {
                let low = s.low[n].min(s.index[m]);
                s.low.insert(n.clone(), low);
            }
        }
        if s.low[n] == s.index[n] {
            let mut component = Vec::new();
            loop {
                let m = s.stack.pop().expect("on the stack");
                s.on_stack.remove(&m);
                component.push(m.clone());
                if m == *n {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for n in edges.keys() {
        if !s.index.contains_key(n) {
            visit(n, edges, &mut s);
        }
    }
    s.found
}

/// The folder of a module: its first segment (`main` for the root).
fn folder(module: &[String]) -> String {
    module.first().cloned().unwrap_or_else(|| "(root)".into())
}

/// Folder -> folders it imports from.
fn folder_edges(g: &Graph) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &g.edges {
        let f = folder(from);
        let entry = out.entry(f.clone()).or_default();
        for to in tos {
            let t = folder(to);
            if t != f && !from.is_empty() {
                entry.insert(t);
            }
        }
    }
    out
}

/// The layers of one crate as `docs/architecture.md`'s table gives them:
/// module prefix (`plan::stream`, `results`) -> layer number (1 = top).
fn layers(crate_name: &str) -> BTreeMap<ModPath, u32> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md");
    let mut out = BTreeMap::new();
    // Rows: `| control | 2 results | `results`, `plan::stream` |`.
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[1] != crate_name {
            continue;
        }
        let layer: u32 = cells[2]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a layer number in {line:?}"));
        for module in cells[3].split(',') {
            let module = module.trim().trim_matches('`');
            let path: ModPath = if module == "(root)" {
                Vec::new()
            } else {
                module.split("::").map(String::from).collect()
            };
            assert!(
                out.insert(path, layer).is_none(),
                "{module} is listed twice in the layer table"
            );
        }
    }
    assert!(
        !out.is_empty(),
        "no layer rows for {crate_name} in docs/architecture.md"
    );
    out
}

/// The layer of a module: that of its longest listed prefix.
fn layer_of(module: &[String], layers: &BTreeMap<ModPath, u32>) -> Option<u32> {
    // The root's row is the root's alone: a module no row names is in no
    // layer, not in the root's.
    let shortest = usize::from(!module.is_empty());
    (shortest..=module.len())
        .rev()
        .find_map(|n| layers.get(&module[..n]))
        .copied()
}

/// Everything wrong with one crate's graph, one line each.
fn problems(g: &Graph, layers: &BTreeMap<ModPath, u32>) -> Vec<String> {
    let name = |m: &ModPath| g.files[m].clone();
    let mut out = Vec::new();
    for cycle in cycles(&g.edges) {
        let names: Vec<String> = cycle.iter().map(name).collect();
        out.push(format!("file cycle: {}", names.join(" <-> ")));
    }
    for cycle in cycles(&folder_edges(g)) {
        out.push(format!("folder cycle: {}", cycle.join(" <-> ")));
    }
    for (file, glob) in &g.globs {
        out.push(format!("{} imports {} by glob", name(file), name(glob)));
    }
    for module in g.files.keys() {
        if layer_of(module, layers).is_none() {
            out.push(format!(
                "{} is in no layer of docs/architecture.md",
                name(module)
            ));
        }
    }
    for (from, tos) in &g.edges {
        let Some(lf) = layer_of(from, layers) else {
            continue;
        };
        for to in tos {
            if let Some(lt) = layer_of(to, layers) {
                if lt < lf {
                    out.push(format!(
                        "upward import: {} (layer {lf}) imports {} (layer {lt})",
                        name(from),
                        name(to)
                    ));
                }
            }
        }
    }
    out
}

fn crate_src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join("src")
}

fn check(crate_name: &str, dir: &str) {
    let sources = sources(&crate_src(dir));
    let g = graph(&sources);
    let edges: usize = g.edges.values().map(BTreeSet::len).sum();
    let folders = folder_edges(&g);
    let folder_count: usize = folders.values().map(BTreeSet::len).sum();
    println!(
        "{crate_name}: {} files, {edges} file edges, {} folders, {folder_count} folder edges",
        g.files.len(),
        folders.len()
    );
    let problems = problems(&g, &layers(crate_name));
    assert!(
        problems.is_empty(),
        "{crate_name}:\n{}",
        problems.join("\n")
    );
}

#[test]
fn control_has_no_cycle_and_no_upward_import() {
    check("control", "control");
}

#[test]
fn datapath_has_no_cycle_and_no_upward_import() {
    check("datapath", "datapath");
}

#[test]
fn results_has_no_cycle_and_no_upward_import() {
    check("results", "results");
}

#[test]
fn host_has_no_cycle_and_no_upward_import() {
    check("host", "host");
}

#[test]
fn report_has_no_cycle_and_no_upward_import() {
    check("report", "report");
}

#[test]
fn remote_has_no_cycle_and_no_upward_import() {
    check("remote", "remote");
}

/// Every crate whose layers docs/architecture.md lists, and its directory
/// (the order between crates is Cargo's to check: a crate cannot name one
/// that does not depend on it).
const CRATES: [(&str, &str); 6] = [
    ("control", "control"),
    ("datapath", "datapath"),
    ("results", "results"),
    ("host", "host"),
    ("report", "report"),
    ("remote", "remote"),
];

/// The lowest and highest layers' first modules of a crate.
fn bottom_and_top(layers: &BTreeMap<ModPath, u32>) -> (ModPath, ModPath) {
    let bottom = layers.iter().max_by_key(|(_, l)| **l).expect("layers").0;
    let top = layers
        .iter()
        .filter(|(m, _)| !m.is_empty())
        .min_by_key(|(_, l)| **l)
        .expect("layers")
        .0;
    (bottom.clone(), top.clone())
}

#[test]
fn a_planted_upward_import_and_a_planted_cycle_are_found() {
    for (crate_name, dir) in CRATES {
        let layers = layers(crate_name);
        let mut sources = sources(&crate_src(dir));
        let (bottom, top) = bottom_and_top(&layers);
        let bottom = sources
            .keys()
            .find(|m| m.starts_with(&bottom) && !m.is_empty())
            .expect("a module in the bottom layer")
            .clone();
        let top = sources
            .keys()
            .find(|m| m.starts_with(&top) && !m.is_empty())
            .expect("a module in the top layer")
            .clone();
        let planted = format!("\nuse crate::{} as _planted;\n", top.join("::"));
        sources
            .get_mut(&bottom)
            .expect("the bottom file")
            .1
            .push_str(&planted);
        let found = problems(&graph(&sources), &layers);
        let from = &sources[&bottom].0;
        let to = &sources[&top].0;
        assert!(
            found
                .iter()
                .any(|p| p.starts_with(&format!("upward import: {from} ")) && p.contains(to)),
            "{crate_name}: the planted `use` in {from} of {to} was not reported: {found:?}"
        );
    }
}

#[test]
fn a_planted_cycle_is_found() {
    for (crate_name, dir) in CRATES {
        let layers = layers(crate_name);
        let mut sources = sources(&crate_src(dir));
        let g = graph(&sources);
        let (from, to) = g
            .edges
            .iter()
            .filter(|(from, _)| !from.is_empty())
            .find_map(|(from, tos)| {
                Some((from.clone(), tos.iter().find(|t| !t.is_empty())?.clone()))
            })
            .expect("an edge between two files");
        let planted = format!("\nuse crate::{} as _planted;\n", from.join("::"));
        sources.get_mut(&to).expect("the file").1.push_str(&planted);
        let found = problems(&graph(&sources), &layers);
        let (a, b) = (&sources[&from].0, &sources[&to].0);
        assert!(
            found.iter().any(|p| p.starts_with("file cycle:")
                && p.contains(a.as_str())
                && p.contains(b.as_str())),
            "{crate_name}: the planted cycle {a} <-> {b} was not reported: {found:?}"
        );
    }
}

#[test]
fn a_planted_glob_import_is_found() {
    let layers = layers("control");
    let mut sources = sources(&crate_src("control"));
    let child = sources
        .keys()
        .find(|m| m.len() == 2 && sources.contains_key(&m[..1]))
        .expect("a module in a folder")
        .clone();
    sources
        .get_mut(&child)
        .expect("the file")
        .1
        .push_str("\n#[allow(unused_imports)]\nuse super::*;\n");
    let found = problems(&graph(&sources), &layers);
    let file = &sources[&child].0;
    assert!(
        found
            .iter()
            .any(|p| p.starts_with(&format!("{file} imports")) && p.ends_with("by glob")),
        "{found:?}"
    );
}

#[test]
fn cycles_are_the_components_of_more_than_one_file() {
    let mut edges: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for (a, b) in [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (6, 6)] {
        edges.entry(a).or_default().insert(b);
        edges.entry(b).or_default();
    }
    assert_eq!(cycles(&edges), vec![vec![1, 2, 3]]);
}

/// `cargo test --test layers graph -- --ignored --nocapture`: the edges,
/// cycles and globs of both crates, for reading.
#[test]
#[ignore]
fn by_hand_graph_printed() {
    for (_, dir) in CRATES {
        let g = graph(&sources(&crate_src(dir)));
        for cycle in cycles(&g.edges) {
            let names: Vec<&str> = cycle.iter().map(|m| g.files[m].as_str()).collect();
            println!("{dir} file cycle ({}): {}", names.len(), names.join(" "));
            for from in &cycle {
                for to in g.edges[from].iter().filter(|t| cycle.contains(t)) {
                    println!("    {} -> {}", g.files[from], g.files[to]);
                }
            }
        }
        for cycle in cycles(&folder_edges(&g)) {
            println!("{dir} folder cycle: {}", cycle.join(" "));
            for (from, tos) in &g.edges {
                for to in tos {
                    let (f, t) = (folder(from), folder(to));
                    if f != t && cycle.contains(&f) && cycle.contains(&t) && !from.is_empty() {
                        println!("    {} -> {}", g.files[from], g.files[to]);
                    }
                }
            }
        }
        for (file, glob) in &g.globs {
            println!("{dir} glob: {} -> {}", g.files[file], g.files[glob]);
        }
        for (from, tos) in folder_edges(&g) {
            println!(
                "{dir} folder {from} -> {}",
                tos.into_iter().collect::<Vec<_>>().join(" ")
            );
        }
    }
}

#[test]
fn a_file_in_no_layer_is_found() {
    let layers = layers("control");
    let mut sources = sources(&crate_src("control"));
    sources.insert(
        vec!["planted".to_string()],
        (
            "planted.rs".to_string(),
            "use crate::cli::Cli;\n".to_string(),
        ),
    );
    let found = problems(&graph(&sources), &layers);
    assert!(
        found.contains(&"planted.rs is in no layer of docs/architecture.md".to_string()),
        "{found:?}"
    );
}
