//! Module layering, checked from source text: no cycles between the top-level modules of
//! `src/lib.rs`, and every import going down (or sideways) the `layers` block of
//! docs/ARCHITECTURE.md. Uses only `std` and not the `keel` crate, so it builds in a moment.

// Test code: a failed unwrap is a failed test, reported with its panic message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// module -> module it uses -> evidence (`src/file.rs:line`), sorted so output is stable.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Blanks comments and string/char literals, keeping newlines so line numbers survive.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, from: usize, to: usize| {
        for &ch in &c[from..to.min(c.len())] {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < c.len() {
        let start = i;
        let ident_before = |k: usize| k > 0 && is_ident(c[k - 1]);
        // A raw string is `r#*"`, optionally after a lone `b`/`c` prefix; `r#ident` is not.
        let raw = c[i] == 'r' && (!ident_before(i) || (matches!(c[i - 1], 'b' | 'c') && !ident_before(i - 1)));
        let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
        let find = |from: usize, what: &[char]| (from..c.len()).find(|&k| c[k..].starts_with(what)).unwrap_or(c.len());
        if at(i) == '/' && at(i + 1) == '/' {
            i = find(i, &['\n']);
        } else if at(i) == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if raw && at(i + 1 + hashes) == '"' {
            out.push('r');
            i += 2 + hashes;
            let close: Vec<char> = std::iter::once('"').chain("#".repeat(hashes).chars()).collect();
            i = find(i, &close);
            blank(&mut out, start + 1, i + close.len());
            i += close.len();
            continue;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c[i] == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A char literal; a lone `'` is a lifetime or a label and stays.
            i += 3;
            if c[start + 1] == '\\' {
                i = find(i, &['\'']) + 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        }
        blank(&mut out, start, i);
    }
    out
}

/// Identifiers, `::`, and single punctuation characters, each with its 1-based line.
fn tokens(clean: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = clean.chars().collect();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < c.len() {
        let start = i;
        if c[i] == '\n' {
            line += 1;
        } else if is_ident(c[i]) {
            while i + 1 < c.len() && is_ident(c[i + 1]) {
                i += 1;
            }
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            i += 1;
        }
        if !c[start].is_whitespace() {
            out.push((c[start..=i].iter().collect(), line));
        }
        i += 1;
    }
    out
}

/// `mod x;` at the top of lib.rs, whatever its visibility.
fn top_level_modules(lib_rs: &str) -> BTreeSet<String> {
    let t = tokens(&strip(lib_rs));
    let mut depth = 0;
    let mut out = BTreeSet::new();
    for (i, (tok, _)) in t.iter().enumerate() {
        match tok.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "mod" if depth == 0 && t.get(i + 2).is_some_and(|n| n.0 == ";") => {
                out.insert(t[i + 1].0.clone());
            }
            _ => {}
        }
    }
    out
}

/// First segments of a path at the crate root starting at token `k`: `x` or `{x, y::{..}}`.
fn roots(t: &[(String, usize)], mut k: usize, out: &mut Vec<(usize, String)>) {
    let word = |k: usize| t.get(k).is_some_and(|(s, _)| s.chars().all(is_ident));
    match t.get(k).map(|(s, _)| s.as_str()) {
        Some("{") => {
            let (mut depth, mut expecting) = (0, true);
            while let Some((tok, line)) = t.get(k) {
                match tok.as_str() {
                    "{" => depth += 1,
                    "}" if depth == 1 => return,
                    "}" => depth -= 1,
                    "," if depth == 1 => expecting = true,
                    _ if depth == 1 && expecting && word(k) => {
                        out.push((*line, tok.clone()));
                        expecting = false;
                    }
                    _ if depth == 1 => expecting = false,
                    _ => {}
                }
                k += 1;
            }
        }
        Some(s) if word(k) => out.push((t[k].1, s.to_string())),
        _ => {}
    }
}

/// `(line, name)` of each path reaching the crate root (`crate::x`, or enough `super::`s
/// for a file `depth` modules below the root). The caller keeps the names that are modules.
fn references(src: &str, depth: usize) -> Vec<(usize, String)> {
    let t = tokens(&strip(src));
    let is = |k: usize, s: &str| t.get(k).is_some_and(|(tok, _)| tok == s);
    let mut braces: Vec<bool> = Vec::new(); // per open brace: does it open an inline `mod x {`?
    let mut out = Vec::new();
    for (i, (tok, _)) in t.iter().enumerate() {
        match tok.as_str() {
            "{" => braces.push(i >= 2 && is(i - 2, "mod")),
            "}" => {
                braces.pop();
            }
            "crate" if is(i + 1, "::") => roots(&t, i + 2, &mut out),
            "super" if i == 0 || !is(i - 1, "::") => {
                let mut k = i;
                while is(k, "super") && is(k + 1, "::") {
                    k += 2;
                }
                if (k - i) / 2 == depth + braces.iter().filter(|m| **m).count() {
                    roots(&t, k, &mut out);
                }
            }
            _ => {}
        }
    }
    out
}

/// The graph of `files` (paths relative to src/, `/`-separated, with their text).
fn graph(modules: &BTreeSet<String>, files: &[(String, String)]) -> Graph {
    let mut depth: BTreeMap<String, usize> = BTreeMap::new();
    for (path, _) in files {
        let parts = path.split('/').count();
        depth.insert(path.clone(), parts - usize::from(path.ends_with("/mod.rs")));
    }
    // `#[path = "x_tests.rs"] mod tests;` puts that file one module below its includer.
    for (path, src) in files {
        let dir = path.rfind('/').map_or("", |k| &path[..=k]);
        for line in src.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("#[path = \"") {
                let target = rest.split('"').next().unwrap_or_default();
                depth.insert(format!("{dir}{target}"), depth[path] + 1);
            }
        }
    }
    let mut g: Graph = modules.iter().map(|m| (m.clone(), BTreeMap::new())).collect();
    for (path, src) in files {
        let from = path.split('/').next().unwrap_or_default().trim_end_matches(".rs");
        let Some(targets) = g.get_mut(from) else { continue };
        for (line, to) in references(src, depth[path]) {
            if to != from && modules.contains(&to) {
                let ev = targets.entry(to).or_default();
                let here = format!("src/{path}:{line}");
                if ev.last() != Some(&here) {
                    ev.push(here);
                }
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut Tarjan<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        let g = t.g;
        for w in g.get(v).into_iter().flat_map(BTreeMap::keys) {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                t.low.insert(v, t.low[v].min(t.low[w]));
            } else if t.stack.contains(&w) {
                t.low.insert(v, t.low[v].min(t.index[w]));
            }
        }
        if t.low[v] == t.index[v] {
            let at = t.stack.iter().rposition(|&s| s == v).unwrap_or_default();
            let comp: Vec<String> = t.stack.drain(at..).map(String::from).collect();
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let (index, low, stack, out) = Default::default();
    let mut t = Tarjan {
        g,
        index,
        low,
        stack,
        out,
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    for comp in &mut t.out {
        comp.sort();
    }
    t.out.sort();
    t.out
}

fn evidence(ev: &[String]) -> String {
    ev.iter().take(2).cloned().collect::<Vec<_>>().join(", ")
}

/// One message per cycle: its modules, then every edge inside it with where it comes from.
fn cycle_report(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for comp in cycles(g) {
        let mut msg = format!("cycle among {} modules: {}", comp.len(), comp.join(", "));
        for a in &comp {
            for (b, ev) in g[a].iter().filter(|(b, _)| comp.contains(b)) {
                msg += &format!("\n    {a} -> {b}: {}", evidence(ev));
            }
        }
        out.push(msg);
    }
    out
}

struct Layer {
    name: String,
    leaf: bool,
    modules: Vec<String>,
}

/// The ```` ```layers ```` block of a markdown document, top layer first.
fn parse_layers(doc: &str) -> Result<Vec<Layer>, String> {
    let mut layers = Vec::new();
    for (n, line) in doc
        .lines()
        .enumerate()
        .skip_while(|(_, l)| l.trim() != "```layers")
        .skip(1)
    {
        let line = line.trim();
        if line.starts_with("```") {
            return if layers.is_empty() {
                Err("the `layers` block is empty".into())
            } else {
                Ok(layers)
            };
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || {
            format!(
                "line {}: want `layer: mod, ..` or `layer (leaf): ..`, not `{line}`",
                n + 1
            )
        };
        let (head, mods) = line.split_once(':').ok_or_else(bad)?;
        let (name, leaf) = match head.trim().strip_suffix("(leaf)") {
            Some(name) => (name.trim(), true),
            None => (head.trim(), false),
        };
        if name.is_empty() || !name.chars().all(|c| is_ident(c) || c == '-') {
            return Err(bad());
        }
        let modules = mods
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(String::from)
            .collect();
        layers.push(Layer {
            name: name.to_string(),
            leaf,
            modules,
        });
    }
    Err("no fenced ```layers block (or it is never closed)".into())
}

/// Modules missing from, unknown to, or repeated in the layers, and every import against them.
fn check_layers(layers: &[Layer], modules: &BTreeSet<String>, g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    let mut of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for m in &layer.modules {
            if !modules.contains(m) {
                out.push(format!(
                    "layer {} lists `{m}`, which src/lib.rs does not declare",
                    layer.name
                ));
            }
            if let Some(j) = of.insert(m, i) {
                out.push(format!("`{m}` is in two layers: {} and {}", layers[j].name, layer.name));
            }
        }
    }
    for m in modules.iter().filter(|m| !of.contains_key(m.as_str())) {
        out.push(format!(
            "module `{m}` (src/lib.rs) is in no layer of the `layers` block"
        ));
    }
    for (a, targets) in g {
        for (b, ev) in targets {
            let (Some(&la), Some(&lb)) = (of.get(a.as_str()), of.get(b.as_str())) else {
                continue;
            };
            let (x, y) = (&layers[la].name, &layers[lb].name);
            if layers[la].leaf {
                out.push(format!(
                    "{a} -> {b} ({a} is in leaf layer {x}, which uses no keel module): {}",
                    evidence(ev)
                ));
            } else if lb < la {
                out.push(format!(
                    "{a} -> {b} ({a} is in layer {x}, {b} in higher layer {y}): {}",
                    evidence(ev)
                ));
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, as (path relative to src/, text); `rel` is `dir` with a `/`.
fn rust_files(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).expect("utf-8 file name");
        if path.is_dir() {
            rust_files(&path, &format!("{rel}{name}/"), out);
        } else if name.ends_with(".rs") {
            out.push((
                format!("{rel}{name}"),
                fs::read_to_string(&path).expect("read source file"),
            ));
        }
    }
}

#[test]
fn modules_respect_the_declared_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let modules = top_level_modules(&fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs"));
    assert!(
        modules.len() >= 5,
        "found only {} modules in src/lib.rs: {modules:?}",
        modules.len()
    );
    let mut files = Vec::new();
    rust_files(&root.join("src"), "", &mut files);
    files.retain(|(p, _)| p != "lib.rs" && p != "main.rs");
    let g = graph(&modules, &files);
    let edges: usize = g.values().map(BTreeMap::len).sum();
    assert!(
        edges > 0,
        "no edge between modules in {} files: the parser reads nothing",
        files.len()
    );
    let mut problems = cycle_report(&g);
    let doc = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("read docs/ARCHITECTURE.md");
    match parse_layers(&doc) {
        Ok(layers) => problems.extend(check_layers(&layers, &modules, &g)),
        Err(e) => problems.push(format!("docs/ARCHITECTURE.md: {e}")),
    }
    assert!(
        problems.is_empty(),
        "{} architecture problem(s):\n  {}\n",
        problems.len(),
        problems.join("\n  ")
    );
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect()
}

fn names(src: &str, depth: usize) -> Vec<String> {
    references(src, depth).into_iter().map(|(_, n)| n).collect()
}

#[test]
fn lib_modules_of_any_visibility_and_not_inline_ones() {
    let lib = "//! mod fake;\npub mod a;\npub(crate) mod b;\n#[cfg(test)]\nmod c;\nmod d { mod e; }";
    assert_eq!(top_level_modules(lib), set(&["a", "b", "c"]));
}

#[test]
fn grouped_and_nested_uses_are_seen() {
    let src = "use crate::{a, b::{c, d::E}, f::*};\npub use crate::g;\nfn x() -> crate::h::T { crate :: i::f() }";
    assert_eq!(names(src, 1), ["a", "b", "f", "g", "h", "i"]);
    assert_eq!(
        references("use crate::{\n    a,\n    b,\n};", 1)[1],
        (3, "b".to_string())
    );
}

#[test]
fn comments_strings_and_chars_are_ignored() {
    let src = r####"
        // use crate::a;
        /// crate::b
        //! crate::c
        /* crate::d /* nested crate::e */ crate::f */
        let s = "crate::g \" crate::h";
        let r = r#"crate::i " still"#;
        let br = br##"crate::j"##;
        let q = '"'; let l: &'static str = "crate::k";
        fn f<'a>(x: &'a str) { crate::real::f() }
    "####;
    assert_eq!(names(src, 1), ["real"]);
    assert_eq!(strip("a\n/* x\n y */ b").lines().count(), 3);
}

#[test]
fn super_edges_only_when_they_reach_the_crate_root() {
    let src = "use super::x;\nmod tests { use super::super::y; use super::super::super::z; }";
    assert_eq!(names(src, 2), ["z"]);
    assert_eq!(names("use super::{p, q};", 1), ["p", "q"]);
    let fs = files(&[
        ("b/inner.rs", "#[path = \"inner_tests.rs\"]\nmod tests;"),
        ("b/inner_tests.rs", "use super::super::a::X;"),
    ]);
    assert!(graph(&set(&["a", "b"]), &fs)["b"].is_empty());
}

#[test]
fn a_cycle_is_found_named_and_located() {
    let m = set(&["a", "b", "c", "d"]);
    let g = graph(
        &m,
        &files(&[
            ("a.rs", "use crate::b;"),
            ("b/mod.rs", "\n\nuse crate::c::X;"),
            ("c/x.rs", "use crate::{a, d};"),
        ]),
    );
    assert_eq!(cycles(&g), [["a", "b", "c"]]);
    let report = cycle_report(&g).join("\n");
    assert!(report.contains("cycle among 3 modules: a, b, c"), "{report}");
    assert!(
        report.contains("b -> c: src/b/mod.rs:3") && !report.contains("-> d"),
        "{report}"
    );
    assert!(cycles(&graph(&m, &files(&[("a.rs", "use crate::b;")]))).is_empty());
}

const DOC: &str = "text\n```layers\n# top first\ntop: a\nmid: b, c\nbase (leaf): d\n```\n";

#[test]
fn an_upward_import_is_reported() {
    let m = set(&["a", "b", "c", "d"]);
    let g = graph(
        &m,
        &files(&[
            ("a.rs", "use crate::b;"),
            ("b.rs", "use crate::{c, d};"),
            ("c.rs", "crate::a::f();"),
        ]),
    );
    let layers = parse_layers(DOC).expect("parse");
    assert!(layers[2].leaf && layers[1].modules == ["b", "c"]);
    assert_eq!(
        check_layers(&layers, &m, &g),
        ["c -> a (c is in layer mid, a in higher layer top): src/c.rs:1"]
    );
}

#[test]
fn unlisted_unknown_and_repeated_modules_are_reported() {
    let doc = "```layers\ntop: a, zz\nbase: b, a\n```";
    let problems = check_layers(
        &parse_layers(doc).expect("parse"),
        &set(&["a", "b", "c"]),
        &Graph::new(),
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("`zz`") && problems[1].contains("two layers"));
    assert!(problems[2].contains("module `c`") && problems[2].contains("no layer"));
    assert!(parse_layers("no block here").is_err());
    assert!(parse_layers("```layers\njust words\n```").is_err());
}

#[test]
fn a_leaf_violation_is_reported() {
    let m = set(&["a", "b", "c", "d"]);
    let g = graph(&m, &files(&[("d.rs", "\nuse crate::c;")]));
    let problems = check_layers(&parse_layers(DOC).expect("parse"), &m, &g);
    assert_eq!(
        problems,
        ["d -> c (d is in leaf layer base, which uses no keel module): src/d.rs:2"]
    );
}

/// The engine's fields a front end must not reach into: it uses the façade's methods.
const ENGINE_FIELDS: &[&str] = &[
    "config",
    "provider",
    "registry",
    "authorizer",
    "hooks",
    "session",
    "project",
    "compactor",
    "subagent",
    "structured",
    "harness",
];

/// `engine.<field>` uses (not method calls) in one file's text, as `line: field`.
fn field_reaches(src: &str) -> Vec<String> {
    let clean = strip(src);
    let mut out = Vec::new();
    for (n, line) in clean.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("engine.") {
            let before_ok = i == 0 || !rest[..i].ends_with(|c: char| is_ident(c));
            let after = &rest[i + "engine.".len()..];
            let name: String = after.chars().take_while(|c| is_ident(*c)).collect();
            let called = after[name.len()..].trim_start().starts_with('(');
            if before_ok && !called && ENGINE_FIELDS.contains(&name.as_str()) {
                out.push(format!("{}: engine.{name}", n + 1));
            }
            rest = &after[name.len()..];
        }
    }
    out
}

#[test]
fn front_ends_use_the_engine_facade() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), "", &mut files);
    let mut problems = Vec::new();
    let front = files
        .iter()
        .filter(|(p, _)| (p.starts_with("headless/") || p.starts_with("tui/")) && !p.contains("/tests/"));
    let mut seen = 0;
    for (path, src) in front {
        seen += 1;
        problems.extend(field_reaches(src).into_iter().map(|r| format!("src/{path}:{r}")));
    }
    assert!(seen > 10, "found only {seen} front-end files");
    assert!(
        problems.is_empty(),
        "front ends reach into the engine's fields (use its methods, engine/facade.rs):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn a_field_reach_is_seen_and_a_method_call_is_not() {
    let src = "let a = engine.session.id;\nlet b = engine.session_id();\nlet c = engine.provider();\n// engine.config\nlet d = my_engine.config;";
    assert_eq!(field_reaches(src), ["1: engine.session"]);
}
