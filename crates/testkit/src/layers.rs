//! The layer check of the library crates: the order of a crate's `mod` declarations in
//! `src/lib.rs` is its layering, bottom first. A module may refer to the modules declared
//! before it, never to one declared after it (an "upward" import), and no modules may refer
//! to each other in a loop. `lib.rs` is the top and may use every module. A module with
//! submodules (`src/acme/mod.rs` or `src/acme.rs` with `mod client;`...) layers its
//! children the same way, by the order of their declarations in it.
//!
//! What counts as a reference from a module file: a path `crate::NAME...` (NAME a module,
//! or an item `lib.rs` re-exports with `pub use NAME::...`, which counts as NAME; an item
//! defined in `lib.rs` itself counts as `lib.rs`, the top), the names in
//! `use crate::{...}`, and `super::NAME` in a submodule. Comments and string literals are
//! left out, and so is everything from a file's first `#[cfg(test)]` on: unit tests may
//! use every layer.
//!
//! The check parses the text (no compiler involved): it reads `mod` and `use` lines the
//! way rustfmt writes them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// One reference from a module to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The file that refers.
    pub file: PathBuf,
    /// Its line, from 1.
    pub line: usize,
    /// The path as written (`crate::error::StoreError`).
    pub text: String,
    /// The referring module (`builder`, `acme::client`).
    pub from: String,
    /// The module referred to (`error`, `acme::storage`, or `lib.rs`).
    pub to: String,
}

impl fmt::Display for Import {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {} (module {} refers to {})",
            self.file.display(),
            self.line,
            self.text,
            self.from,
            self.to
        )
    }
}

/// A breach of the layering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A module refers to one declared after it (or to `lib.rs`): every such reference.
    Upward {
        /// The crate's directory name (`store`).
        krate: String,
        /// The references, all from one module to one other.
        imports: Vec<Import>,
    },
    /// Modules that refer to each other in a loop: one reference per module of the loop.
    Loop {
        /// The crate's directory name.
        krate: String,
        /// The modules of the loop, sorted.
        modules: Vec<String>,
        /// A reference between two of them for each module of the loop.
        imports: Vec<Import>,
    },
}

impl Finding {
    /// The short name a list of tolerated findings uses: `store: builder -> error` or
    /// `store: loop builder, error, source`.
    pub fn key(&self) -> String {
        match self {
            Finding::Upward { krate, imports } => {
                let first = &imports[0];
                format!("{krate}: {} -> {}", first.from, first.to)
            }
            Finding::Loop { krate, modules, .. } => {
                format!("{krate}: loop {}", modules.join(", "))
            }
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Upward { imports, .. } => {
                writeln!(
                    f,
                    "{}: an upward import (declared later in its parent):",
                    self.key()
                )?;
                for i in imports {
                    writeln!(f, "  {i}")?;
                }
            }
            Finding::Loop { imports, .. } => {
                writeln!(f, "{}: an import loop:", self.key())?;
                for i in imports {
                    writeln!(f, "  {i}")?;
                }
            }
        }
        Ok(())
    }
}

/// The library crates of a workspace: every `crates/NAME` with a `src/lib.rs`, sorted.
pub fn library_crates(workspace: &Path) -> Vec<PathBuf> {
    let dir = workspace.join("crates");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("src/lib.rs").is_file())
        .collect();
    out.sort();
    out
}

/// A module and its declared children, in declaration order.
struct Module {
    /// `acme::client`; empty for the crate root.
    path: String,
    file: PathBuf,
    /// The file as messages name it.
    display: PathBuf,
    children: Vec<Module>,
}

/// Every finding of one crate (the directory holding its Cargo.toml), upward imports
/// first, each group sorted.
pub fn check_crate(dir: &Path) -> Vec<Finding> {
    let krate = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let src = dir.join("src");
    let mut root = load(&src.join("lib.rs"), &src, String::new());
    // Name files from the workspace (`crates/store/src/builder.rs`) in messages.
    if let Some(base) = dir.parent().and_then(Path::parent) {
        relative_to(&mut root, base);
    }
    let reexports = reexports(&read(&root.file));
    let mut findings = Vec::new();
    let mut loops = Vec::new();
    check_level(&krate, &root, &root, &reexports, &mut findings, &mut loops);
    findings.extend(loops);
    findings
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The module whose file is `file` (children looked for in `dir`), with its children.
fn load(file: &Path, dir: &Path, path: String) -> Module {
    let text = code_only(&read(file));
    let mut children = Vec::new();
    for name in declared_modules(&text) {
        let (cfile, cdir) = if dir.join(format!("{name}.rs")).is_file() {
            (dir.join(format!("{name}.rs")), dir.join(&name))
        } else {
            (dir.join(&name).join("mod.rs"), dir.join(&name))
        };
        if !cfile.is_file() {
            continue; // a `mod` with another #[path], or a generated file
        }
        let cpath = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}::{name}")
        };
        children.push(load(&cfile, &cdir, cpath));
    }
    Module {
        path,
        file: file.to_path_buf(),
        display: file.to_path_buf(),
        children,
    }
}

fn relative_to(m: &mut Module, base: &Path) {
    let rel = m.file.strip_prefix(base).map(Path::to_path_buf);
    if let Ok(rel) = rel {
        m.display = rel;
    }
    for c in &mut m.children {
        relative_to(c, base);
    }
}

/// `mod NAME;` declarations (file modules; `#[cfg(test)]` ones and inline `mod x {}` left
/// out), in order.
fn declared_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut test_attr = false;
    for line in code.lines() {
        let l = line.trim();
        if l.starts_with("#[cfg(test)]") {
            test_attr = true;
            continue;
        }
        let decl = l
            .strip_prefix("pub ")
            .or_else(|| l.strip_prefix("pub(crate) "))
            .or_else(|| l.strip_prefix("pub(super) "))
            .unwrap_or(l);
        if let Some(rest) = decl.strip_prefix("mod ") {
            if let Some(name) = rest.strip_suffix(';') {
                if !test_attr && name.trim() != "tests" {
                    out.push(name.trim().to_string());
                }
            }
        }
        if !l.starts_with("#[") {
            test_attr = false;
        }
    }
    out
}

/// Items `lib.rs` re-exports: `pub use NAME::{A, B};` / `pub use NAME::A;` maps A and B to
/// the module NAME.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let code = code_only(lib);
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest
            .trim_start_matches("crate::")
            .trim_start_matches("self::");
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        let module = module.trim();
        for item in group_entries(items.trim()) {
            let name = item.rsplit("::").next().unwrap_or(&item);
            let name = name.split(" as ").last().unwrap_or(name).trim();
            if !name.is_empty() && name != "*" {
                out.insert(name.to_string(), module.to_string());
            }
        }
    }
    out
}

/// The comma-separated entries of `{a, b::{c, d}, e}` (or the one entry without braces),
/// nested groups kept whole.
fn group_entries(s: &str) -> Vec<String> {
    let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
        return vec![s.to_string()];
    };
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The text with comments and string and char literals blanked (newlines kept, so line
/// numbers hold), cut at the first `#[cfg(test)]`.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_start(&b, i) {
            // r"..." or r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            j += 1; // the quote
            out.push_str("\"\"");
            while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                if b[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            i = j;
        } else if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' && char_literal_len(&b, i) > 0 {
            out.push_str("' '");
            i += char_literal_len(&b, i);
        } else {
            out.push(c);
            i += 1;
        }
    }
    match out.find("#[cfg(test)]") {
        Some(at) if is_line_start(&out, at) => out[..at].to_string(),
        _ => out,
    }
}

fn is_line_start(s: &str, at: usize) -> bool {
    s[..at]
        .rsplit('\n')
        .next()
        .is_some_and(|l| l.trim().is_empty())
}

/// Whether `r` at `i` starts a raw string (not the end of an identifier like `for`).
fn raw_start(b: &[char], i: usize) -> bool {
    let before_ok = i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_');
    let mut j = i + 1;
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    before_ok && b.get(j) == Some(&'"')
}

/// The length of a char literal at `i` ('a', '\n', '\u{..}'), 0 for a lifetime.
fn char_literal_len(b: &[char], i: usize) -> usize {
    if b.get(i + 1) == Some(&'\\') {
        let mut j = i + 2;
        while j < b.len() && j < i + 14 {
            if b[j] == '\'' {
                return j - i + 1;
            }
            j += 1;
        }
        0
    } else if b.get(i + 2) == Some(&'\'') {
        3
    } else {
        0
    }
}

/// Check the children of `parent` against each other, then each child's own children.
fn check_level(
    krate: &str,
    root: &Module,
    parent: &Module,
    reexports: &BTreeMap<String, String>,
    findings: &mut Vec<Finding>,
    loops: &mut Vec<Finding>,
) {
    let order: Vec<&str> = parent
        .children
        .iter()
        .map(|m| last_segment(&m.path))
        .collect();
    // Edges between the children: (from, to) -> references.
    let mut edges: BTreeMap<(usize, usize), Vec<Import>> = BTreeMap::new();
    let mut to_top: BTreeMap<usize, Vec<Import>> = BTreeMap::new();
    for (ci, child) in parent.children.iter().enumerate() {
        let mut files = Vec::new();
        collect_files(child, &mut files);
        for file in files {
            for (line, text, target) in references(&file.file, &file.path) {
                // Resolve the path to a module path from the crate root.
                let Some(to) = resolve(&target, root, reexports) else {
                    continue;
                };
                let import = |to: String| Import {
                    file: file.display.clone(),
                    line,
                    text: text.clone(),
                    from: child.path.clone(),
                    to,
                };
                if to.is_empty() {
                    // An item of lib.rs: the top. Only checked at the crate's first level.
                    if parent.path.is_empty() {
                        to_top.entry(ci).or_default().push(import("lib.rs".into()));
                    }
                    continue;
                }
                // Which child of `parent` does `to` lie in?
                let rel = if parent.path.is_empty() {
                    Some(to.as_str())
                } else {
                    to.strip_prefix(&format!("{}::", parent.path))
                };
                let Some(rel) = rel else { continue };
                let first = rel.split("::").next().unwrap_or(rel);
                let Some(ti) = order.iter().position(|n| *n == first) else {
                    continue;
                };
                if ti != ci {
                    edges
                        .entry((ci, ti))
                        .or_default()
                        .push(import(parent.children[ti].path.clone()));
                }
            }
        }
    }
    for imports in to_top.into_values() {
        findings.push(Finding::Upward {
            krate: krate.to_string(),
            imports,
        });
    }
    for (&(from, to), imports) in &edges {
        if to > from {
            findings.push(Finding::Upward {
                krate: krate.to_string(),
                imports: imports.clone(),
            });
        }
    }
    for scc in loops_of(parent.children.len(), &edges) {
        let mut modules: Vec<String> = scc
            .iter()
            .map(|&i| parent.children[i].path.clone())
            .collect();
        modules.sort();
        // One reference out of each module to another module of the loop.
        let imports = scc
            .iter()
            .filter_map(|&m| {
                edges
                    .iter()
                    .find(|((f, t), _)| *f == m && scc.contains(t))
                    .map(|(_, v)| v[0].clone())
            })
            .collect();
        loops.push(Finding::Loop {
            krate: krate.to_string(),
            modules,
            imports,
        });
    }
    for child in &parent.children {
        check_level(krate, root, child, reexports, findings, loops);
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// A module's own file and its descendants' files.
fn collect_files<'a>(m: &'a Module, out: &mut Vec<&'a Module>) {
    out.push(m);
    for c in &m.children {
        collect_files(c, out);
    }
}

/// The strongly connected components of more than one module (Tarjan's algorithm),
/// each sorted.
fn loops_of(n: usize, edges: &BTreeMap<(usize, usize), Vec<Import>>) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for &(f, t) in edges.keys() {
        adj[f].push(t);
    }
    struct St {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[Vec<usize>], s: &mut St) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in &adj[v] {
            match s.index[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort_unstable();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, &adj, &mut s);
        }
    }
    s.out.sort();
    s.out
}

/// Module paths a file refers to, as (line, text as written, path from the crate root
/// with `crate::` removed, e.g. `error::StoreError`). `module` is the file's module path.
fn references(file: &Path, module: &str) -> Vec<(usize, String, String)> {
    let code = code_only(&read(file));
    let mut out = Vec::new();
    let parent_of = |m: &str| -> Option<String> {
        if m.is_empty() {
            None
        } else {
            Some(
                m.rsplit_once("::")
                    .map(|(p, _)| p.to_string())
                    .unwrap_or_default(),
            )
        }
    };
    // `super::` from a module file means its parent; from a `mod.rs`, the same (the
    // module is the directory), so one rule holds.
    let parent = parent_of(module);
    let inline = inline_depths(&code);
    let bytes = code.as_bytes();
    for kw in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(kw) {
            let at = from + at;
            from = at + kw.len();
            // Not part of a longer path (`foo::crate::`) or identifier.
            if at > 0 {
                let p = bytes[at - 1];
                if p.is_ascii_alphanumeric() || p == b'_' || p == b':' {
                    continue;
                }
            }
            if kw == "super::" && parent.is_none() && inline[at] == 0 {
                continue;
            }
            let line = code[..at].matches('\n').count() + 1;
            let rest = &code[from..];
            // `super::` inside an inline `mod x { ... }` of this file means this module.
            let base = if kw == "crate::" {
                String::new()
            } else if inline[at] > 0 {
                module.to_string()
            } else {
                parent.clone().unwrap_or_default()
            };
            let join = |p: &str| -> String {
                if base.is_empty() {
                    p.to_string()
                } else {
                    format!("{base}::{p}")
                }
            };
            if rest.starts_with('{') {
                // use crate::{a::B, c, d::{E, F}};
                let end = matching_brace(rest);
                let group = &rest[..end];
                for entry in group_entries(group) {
                    let entry = entry.split(" as ").next().unwrap_or(&entry).trim();
                    if entry.is_empty() || entry == "self" || entry == "*" {
                        continue;
                    }
                    let flat: String = entry.split_whitespace().collect();
                    out.push((line, format!("{kw}{{{flat}}}"), join(&flat)));
                }
            } else {
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let path = path.trim_end_matches(':').to_string();
                if path.is_empty() || path == "*" {
                    continue;
                }
                out.push((line, format!("{kw}{path}"), join(&path)));
            }
        }
    }
    out.sort();
    out
}

/// For each byte of `code`, how many inline `mod NAME { ... }` blocks enclose it.
fn inline_depths(code: &str) -> Vec<u8> {
    let mut out = vec![0u8; code.len() + 1];
    let mut braces = 0usize;
    let mut opened: Vec<usize> = Vec::new(); // brace depth inside each open inline mod
    let mut pending = false; // saw `mod NAME` and wait for its `{`
    let mut word = String::new();
    let mut last_word = String::new();
    for (i, c) in code.char_indices() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if !word.is_empty() {
            if last_word == "mod" {
                pending = true;
            }
            last_word = std::mem::take(&mut word);
        }
        match c {
            '{' => {
                braces += 1;
                if pending {
                    opened.push(braces);
                }
                pending = false;
            }
            '}' => {
                if opened.last() == Some(&braces) {
                    opened.pop();
                }
                braces = braces.saturating_sub(1);
            }
            ';' => pending = false,
            _ => {}
        }
        let d = u8::try_from(opened.len()).unwrap_or(u8::MAX);
        out[i..i + c.len_utf8()].fill(d);
    }
    out
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// The module a path from the crate root names: the longest run of module names at its
/// start (`acme::client::Foo` -> `acme::client`); an item re-exported by lib.rs -> its
/// module; an item of lib.rs itself -> "" (the top). None: not a module path (a macro,
/// an external crate).
fn resolve(path: &str, root: &Module, reexports: &BTreeMap<String, String>) -> Option<String> {
    let mut segs = path.split("::").map(|s| s.trim()).filter(|s| !s.is_empty());
    let first = segs.next()?;
    let Some(mut m) = root
        .children
        .iter()
        .find(|c| last_segment(&c.path) == first)
    else {
        return match reexports.get(first) {
            Some(module) => Some(module.clone()),
            None if first.starts_with('{') => None,
            None => Some(String::new()),
        };
    };
    for s in segs {
        match m.children.iter().find(|c| last_segment(&c.path) == s) {
            Some(c) => m = c,
            None => break,
        }
    }
    Some(m.path.clone())
}
