//! The file-level import graph of a crate's product code, read from its
//! sources without a compiler: which file names an item that another file
//! defines. `layering.rs` checks it has no circle.
//!
//! A file is one `.rs` file reached from the crate root by `mod x;`
//! declarations outside test code (`#[cfg(test)]` items, and so `tests.rs`
//! files and `tests/` directories, are left out). A file uses another when one
//! of its paths (`use` declarations, `crate::a::b`, `super::x`, `self::m::f`,
//! `$crate::...` in a macro body, or a path that starts with a name it
//! imported) resolves to an item that file defines: a path is followed module
//! by module, through `use` and `pub use` re-exports (so `super::Thing`
//! re-exported by a `mod.rs` leads to the file that defines `Thing`), to the
//! file whose text defines the item (`fn`, `struct`, `enum`, `trait`, `type`,
//! `const`, `static`, `union`, `macro_rules!`, an inline `mod`). A path
//! that ends at a module uses that module's own file.
//!
//! What does not count: a `mod x;` declaration, and a re-export (`pub use`)
//! on its own. A module file that only declares and re-exports its children is
//! their table of contents, not a user of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens of Rust source, without comments, string, byte-string and
/// character literals, lifetimes and numbers (which name no item).
fn tokens(src: &str) -> Vec<Tok> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = b.len();
    while i < n {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < n && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < n {
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
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&b, i + 1);
        } else if (c == 'r' || c == 'b')
            && (b.get(i + 1) == Some(&'"')
                || b.get(i + 1) == Some(&'#') && c == 'r' && raw_start(&b, i + 1)
                || (c == 'b'
                    && b.get(i + 1) == Some(&'r')
                    && matches!(b.get(i + 2), Some('"') | Some('#'))))
        {
            // r"..", r#".."#, b"..", br"..", br#".."#
            let mut j = i + 1;
            if b[j] == 'r' {
                j += 1;
            }
            if c == 'b' && b[i + 1] == '"' {
                i = skip_string(&b, i + 2);
                continue;
            }
            let mut hashes = 0;
            while j < n && b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            // b[j] == '"'
            j += 1;
            'raw: while j < n {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            i = j;
        } else if c == 'b' && b.get(i + 1) == Some(&'\'') {
            i = skip_char(&b, i + 1);
        } else if c == '\'' {
            // A character literal, or a lifetime / label.
            if b.get(i + 1) == Some(&'\\') || b.get(i + 2) == Some(&'\'') {
                i = skip_char(&b, i);
            } else {
                i += 1;
                while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < n && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                // `1..n` is a range, not a number.
                if b[i] == '.' && b.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' || (c == '$' && b.get(i + 1) == Some(&'c')) {
            let start = i;
            i += 1;
            while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let mut word: String = b[start..i].iter().collect();
            if word == "r" && b.get(i) == Some(&'#') {
                // r#ident
                i += 1;
                let s2 = i;
                while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
                word = b[s2..i].iter().collect();
            }
            if word == "$crate" {
                word = "crate".into();
            }
            out.push(Tok::Ident(word));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Tok::Path);
            i += 2;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn raw_start(b: &[char], mut j: usize) -> bool {
    while j < b.len() && b[j] == '#' {
        j += 1;
    }
    b.get(j) == Some(&'"')
}

/// Past the closing quote of a string whose content starts at `i`.
fn skip_string(b: &[char], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Past a character literal whose opening quote is at `i`.
fn skip_char(b: &[char], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '\'' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn is_ident(t: Option<&Tok>, s: &str) -> bool {
    matches!(t, Some(Tok::Ident(w)) if w == s)
}

/// The tokens with test-only items (`#[cfg(test)]`, `#[cfg(any(test, ..))]`)
/// and every attribute removed.
fn product(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == Tok::Punct('#') {
            // `#[..]` or `#![..]`
            let mut j = i + 1;
            if toks.get(j) == Some(&Tok::Punct('!')) {
                j += 1;
            }
            if toks.get(j) == Some(&Tok::Punct('[')) {
                let end = matching(&toks, j);
                let attr = &toks[j..end];
                let test_only = is_ident(attr.get(1), "cfg")
                    && attr.iter().any(|t| *t == Tok::Ident("test".into()))
                    && !attr.iter().any(|t| *t == Tok::Ident("not".into()));
                i = end;
                if test_only {
                    i = skip_item(&toks, i);
                }
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

/// The index past the bracket that closes the one at `open`.
fn matching(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0i32;
    let mut j = open;
    while j < toks.len() {
        match toks[j] {
            Tok::Punct('[') | Tok::Punct('(') | Tok::Punct('{') => depth += 1,
            Tok::Punct(']') | Tok::Punct(')') | Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// Past the item starting at `i` (after its attributes): to its `;`, or
/// through its first brace block (and a `;` right after it).
fn skip_item(toks: &[Tok], mut i: usize) -> usize {
    // Further attributes of the same item.
    while toks.get(i) == Some(&Tok::Punct('#')) {
        let mut j = i + 1;
        if toks.get(j) == Some(&Tok::Punct('!')) {
            j += 1;
        }
        i = matching(toks, j);
    }
    while i < toks.len() {
        match toks[i] {
            Tok::Punct(';') => return i + 1,
            Tok::Punct('{') => {
                let end = matching(toks, i);
                return if toks.get(end) == Some(&Tok::Punct(';')) {
                    end + 1
                } else {
                    end
                };
            }
            Tok::Punct('(') | Tok::Punct('[') => i = matching(toks, i),
            _ => i += 1,
        }
    }
    i
}

/// One name a `use` declaration brings into scope.
#[derive(Debug, Clone)]
struct Import {
    /// The name in scope (`None` for a glob).
    alias: Option<String>,
    path: Vec<String>,
    /// `pub use` (any visibility): a re-export.
    public: bool,
}

/// What one file holds: its module path, the names it defines, the names it
/// imports, and the paths its code names.
#[derive(Debug, Default)]
struct FileInfo {
    module: Vec<String>,
    defines: BTreeSet<String>,
    imports: Vec<Import>,
    paths: Vec<Vec<String>>,
    /// `mod x;` declarations.
    children: Vec<String>,
}

fn parse_use(
    toks: &[Tok],
    mut i: usize,
    prefix: Vec<String>,
    public: bool,
    out: &mut Vec<Import>,
) -> usize {
    let mut path = prefix;
    if toks.get(i) == Some(&Tok::Path) {
        // `::std::x`: an extern crate.
        path.push("::".into());
        i += 1;
    }
    loop {
        match toks.get(i) {
            Some(Tok::Ident(w)) if w == "as" => {
                let alias = match toks.get(i + 1) {
                    Some(Tok::Ident(a)) => a.clone(),
                    _ => String::new(),
                };
                if alias != "_" {
                    out.push(Import {
                        alias: Some(alias),
                        path,
                        public,
                    });
                }
                return i + 2;
            }
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                i += 1;
                if toks.get(i) == Some(&Tok::Path) {
                    i += 1;
                    continue;
                }
                if !is_ident(toks.get(i), "as") {
                    let mut p = path;
                    let alias = if p.last().map(String::as_str) == Some("self") {
                        p.pop();
                        p.last().cloned()
                    } else {
                        p.last().cloned()
                    };
                    out.push(Import {
                        alias,
                        path: p,
                        public,
                    });
                    return i;
                }
            }
            Some(Tok::Punct('*')) => {
                out.push(Import {
                    alias: None,
                    path,
                    public,
                });
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i) {
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = parse_use(toks, i, path.clone(), public, out),
                    }
                }
            }
            _ => return i,
        }
    }
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod",
];

fn scan(toks: &[Tok], module: Vec<String>) -> FileInfo {
    let mut f = FileInfo {
        module,
        ..FileInfo::default()
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(w) if w == "use" => {
                let public = i > 0
                    && (is_ident(toks.get(i - 1), "pub")
                        || toks.get(i - 1) == Some(&Tok::Punct(')')));
                i = parse_use(toks, i + 1, Vec::new(), public, &mut f.imports);
                continue;
            }
            Tok::Ident(w) if w == "macro_rules" && toks.get(i + 1) == Some(&Tok::Punct('!')) => {
                if let Some(Tok::Ident(name)) = toks.get(i + 2) {
                    f.defines.insert(name.clone());
                }
            }
            Tok::Ident(w) if ITEM_KEYWORDS.contains(&w.as_str()) => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1) {
                    let after_name = toks.get(i + 2);
                    if w == "mod" && after_name == Some(&Tok::Punct(';')) {
                        f.children.push(name.clone());
                    } else if !(w == "const" && (name == "fn" || name == "unsafe")) {
                        f.defines.insert(name.clone());
                    }
                }
            }
            Tok::Ident(_) if i == 0 || toks[i - 1] != Tok::Path => {
                // A path: ident (:: ident)*, cut at `::<` (turbofish) and
                // anything that is not a name.
                let mut p = Vec::new();
                let mut j = i;
                while let Some(Tok::Ident(w)) = toks.get(j) {
                    p.push(w.clone());
                    if toks.get(j + 1) == Some(&Tok::Path) {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if p.len() > 1 {
                    f.paths.push(p);
                }
                i = j + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    f
}

/// A crate's product files and what each holds.
pub struct Crate {
    root: PathBuf,
    files: BTreeMap<PathBuf, FileInfo>,
    by_module: BTreeMap<Vec<String>, PathBuf>,
}

impl Crate {
    /// Read the crate whose root file is `root_file` (`lib.rs`, `main.rs`),
    /// following `mod x;` declarations outside test code.
    pub fn read(root_file: &Path) -> Crate {
        let root = root_file.parent().unwrap().to_path_buf();
        let mut c = Crate {
            root: root.clone(),
            files: BTreeMap::new(),
            by_module: BTreeMap::new(),
        };
        let mut todo = vec![(root_file.to_path_buf(), Vec::<String>::new())];
        while let Some((file, module)) = todo.pop() {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            let info = scan(&product(tokens(&text)), module.clone());
            let dir = match file.file_name().and_then(|n| n.to_str()) {
                Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
                _ => file.with_extension(""),
            };
            for child in &info.children {
                let a = dir.join(format!("{child}.rs"));
                let b = dir.join(child).join("mod.rs");
                let f = if a.exists() { a } else { b };
                assert!(f.exists(), "{}: mod {child}; has no file", file.display());
                let mut m = module.clone();
                m.push(child.clone());
                todo.push((f, m));
            }
            let rel = file.strip_prefix(&root).unwrap().to_path_buf();
            c.by_module.insert(module, rel.clone());
            c.files.insert(rel, info);
        }
        c
    }

    /// The product files, relative to the crate's source directory.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }

    /// The file a path named in `from` leads to (`None`: outside the crate,
    /// or a name the file defines itself).
    fn resolve(&self, from: &FileInfo, path: &[String], depth: usize) -> Option<&Path> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let (mut module, rest): (Vec<String>, &[String]) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (from.module.clone(), &path[1..]),
            "super" => {
                let mut m = from.module.clone();
                let mut k = 0;
                while path.get(k).map(String::as_str) == Some("super") {
                    m.pop();
                    k += 1;
                }
                (m, &path[k..])
            }
            first => {
                let mut child = from.module.clone();
                child.push(first.to_string());
                if self.by_module.contains_key(&child) {
                    (child, &path[1..])
                } else if let Some(imp) = from
                    .imports
                    .iter()
                    .find(|i| i.alias.as_deref() == Some(first))
                {
                    let mut full = imp.path.clone();
                    full.extend_from_slice(&path[1..]);
                    return self.resolve(from, &full, depth + 1);
                } else {
                    return None;
                }
            }
        };
        let mut rest = rest;
        loop {
            let file = self.by_module.get(&module)?;
            let info = &self.files[file];
            let Some(name) = rest.first() else {
                return Some(file);
            };
            let mut child = module.clone();
            child.push(name.clone());
            if self.by_module.contains_key(&child) {
                module = child;
                rest = &rest[1..];
                continue;
            }
            if info.defines.contains(name) {
                return Some(file);
            }
            if let Some(imp) = info
                .imports
                .iter()
                .find(|i| i.alias.as_deref() == Some(name))
            {
                let mut full = imp.path.clone();
                full.extend_from_slice(&rest[1..]);
                return self.resolve(info, &full, depth + 1);
            }
            for glob in info.imports.iter().filter(|i| i.alias.is_none()) {
                let mut full = glob.path.clone();
                full.extend_from_slice(rest);
                if let Some(f) = self.resolve(info, &full, depth + 1) {
                    return Some(f);
                }
            }
            // Not found (a macro's output, a derive): the module's own file.
            return Some(file);
        }
    }

    /// Each file and the files it uses (see the module documentation).
    pub fn graph(&self) -> BTreeMap<&Path, BTreeSet<&Path>> {
        let mut g = BTreeMap::new();
        for (file, info) in &self.files {
            let mut uses = BTreeSet::new();
            let named = info
                .imports
                .iter()
                .filter(|i| !i.public)
                .map(|i| i.path.as_slice())
                .chain(info.paths.iter().map(Vec::as_slice));
            for p in named {
                if let Some(t) = self.resolve(info, p, 0) {
                    if t != file.as_path() && !self.is_ancestor(t, info) {
                        uses.insert(t);
                    }
                }
            }
            g.insert(file.as_path(), uses);
        }
        g
    }

    /// Whether `file` is the file of a module that encloses `of`'s (its
    /// folder's `mod.rs`, or the crate root).
    fn is_ancestor(&self, file: &Path, of: &FileInfo) -> bool {
        let m = &self.files[file].module;
        m.len() < of.module.len() && of.module.starts_with(m)
    }

    /// The source directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The circles of `g`: each strongly connected set of more than one file
/// (Tarjan), sorted.
pub fn circles<'a>(g: &BTreeMap<&'a Path, BTreeSet<&'a Path>>) -> Vec<Vec<&'a Path>> {
    struct T<'a, 'g> {
        g: &'g BTreeMap<&'a Path, BTreeSet<&'a Path>>,
        index: BTreeMap<&'a Path, usize>,
        low: BTreeMap<&'a Path, usize>,
        stack: Vec<&'a Path>,
        on: BTreeSet<&'a Path>,
        next: usize,
        out: Vec<Vec<&'a Path>>,
    }
    impl<'a> T<'a, '_> {
        fn visit(&mut self, v: &'a Path) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            let empty = BTreeSet::new();
            let succ: Vec<&'a Path> = self.g.get(v).unwrap_or(&empty).iter().copied().collect();
            for w in succ {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let l = self.low[w].min(self.low[v]);
                    self.low.insert(v, l);
                } else if self.on.contains(w) {
                    let l = self.index[w].min(self.low[v]);
                    self.low.insert(v, l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out.sort();
    t.out
}
