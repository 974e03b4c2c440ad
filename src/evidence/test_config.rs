//! Configuration files that decide which tests run: `conftest.py`, `pytest.ini`, `tox.ini`,
//! `setup.cfg` and `pyproject.toml` (their pytest and tox sections), `jest.config.*`,
//! `vitest.config.*`, `.mocharc.*`, `package.json` (its `jest` and `mocha` keys and test scripts)
//! and `Cargo.toml` (`test = false`, `autotests = false`, …). They are test files for the ledger: a
//! change that adds a deselection (`--deselect`, `-k`, `-m "not …"`, `--ignore`,
//! `testPathIgnorePatterns`, `exclude`, `collect_ignore`, a skip added from a hook) or narrows a
//! list of what runs (`testpaths`, `testMatch`, `include`) weakens the suite while every test file
//! stays as it was. Pure functions over the file's text before and after.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

#[path = "config_formats.rs"]
mod formats;

use super::super::command;
use super::super::runners::{self, Declared, Runner};
use super::super::subset;
use formats::{Toml, ini_entries, js_keys, toml_entries, yaml_keys};

/// What kind of configuration a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Config {
    /// Python code: its skips are counted with the test file's, its deselections here.
    Conftest,
    /// `pytest.ini`, `tox.ini`, `setup.cfg`.
    Ini,
    Pyproject,
    Jest,
    Vitest,
    Mocha,
    /// `.mocharc.yml`
    MochaYaml,
    PackageJson,
    Cargo,
}

pub(super) fn kind(path: &Path) -> Option<Config> {
    let name = path.file_name()?.to_str()?;
    let stem_is = |prefix: &str| {
        name.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('.'))
            .is_some_and(|ext| matches!(ext, "js" | "ts" | "mjs" | "cjs" | "mts" | "cts" | "json"))
    };
    Some(match name {
        "conftest.py" => Config::Conftest,
        "pytest.ini" | ".pytest.ini" | "tox.ini" | "setup.cfg" => Config::Ini,
        "pyproject.toml" => Config::Pyproject,
        "package.json" => Config::PackageJson,
        "Cargo.toml" => Config::Cargo,
        ".mocharc.yml" | ".mocharc.yaml" => Config::MochaYaml,
        ".mocharc.js" | ".mocharc.cjs" | ".mocharc.mjs" | ".mocharc.json" | ".mocharc.jsonc" => Config::Mocha,
        _ if stem_is("jest.config") => Config::Jest,
        _ if stem_is("vitest.config") || stem_is("vitest.workspace") => Config::Vitest,
        _ => return None,
    })
}

/// How many deselections `after` adds to `before` (and entries of what-runs lists it drops).
pub(super) fn added_deselections(kind: Config, before: &str, after: &str) -> u64 {
    let (b, a) = (selections(kind, before), selections(kind, after));
    let excluded: Vec<String> = a.exclude.iter().filter(|e| !holds_no_tests(e)).cloned().collect();
    let mut count = multiset_added(&b.exclude, &excluded);
    // A list of what runs that is still there but lost entries runs less (a list removed or
    // added whole is the tool's default or a project's choice: not counted).
    let entries = |s: &Selections, key: &str| -> Vec<String> {
        s.include
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let mut keys: Vec<&str> = b.include.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let now = entries(&a, key);
        if !now.is_empty() {
            count += multiset_added(&now, &entries(&b, key));
        }
    }
    count
}

/// Directories no suite keeps its tests in (dependencies, build output, caches, docs): leaving
/// them out is ordinary configuration, not a deselection.
const NOT_TEST_DIRS: &[&str] = &[
    "node_modules",
    "dist",
    "build",
    "out",
    "target",
    "coverage",
    "docs",
    "doc",
    "site",
    "vendor",
    "venv",
    ".venv",
    "env",
    ".env",
    ".tox",
    ".nox",
    ".git",
    ".hg",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".next",
    ".cache",
    "tmp",
    "*.egg",
    "*.egg-info",
    ".eggs",
];

/// Whether an exclusion (`norecursedirs: build`, `testPathIgnorePatterns: /node_modules/`,
/// `addopts: --ignore=docs`) names only such a directory.
fn holds_no_tests(entry: &str) -> bool {
    let value = entry.split_once(": ").map_or(entry, |(_, v)| v);
    let value = value
        .trim_start_matches("--ignore-glob=")
        .trim_start_matches("--ignore=")
        .trim_start_matches("<rootDir>")
        .trim_matches(|c| c == '/' || c == '*' || c == '\'' || c == '"')
        .trim_start_matches("./");
    !value.is_empty() && NOT_TEST_DIRS.contains(&value)
}

/// How many entries of `after` are not in `before` (counted with repetition).
fn multiset_added(before: &[String], after: &[String]) -> u64 {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for b in before {
        *left.entry(b.as_str()).or_default() += 1;
    }
    let mut added = 0;
    for a in after {
        match left.get_mut(a.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added += 1,
        }
    }
    added
}

/// What a configuration says about which tests run.
#[derive(Debug, Default, PartialEq, Eq)]
struct Selections {
    /// Each deselection, as `key: value` (`addopts: -k add`).
    exclude: Vec<String>,
    /// Entries of lists of what runs, by key (`testpaths`, `tests`).
    include: Vec<(String, String)>,
}

fn selections(kind: Config, text: &str) -> Selections {
    let mut s = Selections::default();
    match kind {
        Config::Conftest => {}
        Config::Ini => ini_selections(text, &mut s),
        Config::Pyproject => pyproject_selections(text, &mut s),
        Config::Cargo => cargo_selections(text, &mut s),
        Config::Jest | Config::Vitest | Config::Mocha | Config::PackageJson => {
            for (path, values) in js_keys(text) {
                js_selection(kind, &path, &values, &mut s);
            }
        }
        Config::MochaYaml => {
            for (key, values) in yaml_keys(text) {
                js_selection(Config::Mocha, &[key], &values, &mut s);
            }
        }
    }
    s
}

/// pytest's own keys (in `[pytest]`, `[tool:pytest]`, `[tool.pytest.ini_options]`).
fn pytest_key(key: &str, words: Vec<String>, s: &mut Selections) {
    match key {
        "addopts" => {
            let mut argv = vec!["pytest".to_string()];
            argv.extend(words);
            for sel in subset::selectors(Runner::Pytest, &argv) {
                s.exclude.push(format!("addopts: {sel}"));
            }
            // A file named in `addopts` narrows every run to it.
            for p in subset::positionals(Runner::Pytest, &argv) {
                if !p.contains("::") {
                    s.exclude.push(format!("addopts: {p}"));
                }
            }
        }
        "norecursedirs" | "collect_ignore" => s.exclude.extend(words.into_iter().map(|w| format!("{key}: {w}"))),
        "testpaths" | "python_files" | "python_classes" | "python_functions" => {
            s.include.extend(words.into_iter().map(|w| (key.to_string(), w)))
        }
        _ => {}
    }
}

/// A test command of a tox environment or a package script: what it selects.
fn command_selections(key: &str, line: &str, s: &mut Selections) {
    let segments = command::split(line);
    let reading = runners::recognise_split(&segments, &Declared::default());
    let mut done = Vec::new();
    for r in &reading.runs {
        if done.contains(&(r.runner, r.kind)) {
            continue;
        }
        done.push((r.runner, r.kind));
        if let Some(sel) = subset::of_run(&segments, &reading, r.runner, r.kind) {
            s.exclude.push(format!("{key}: {sel}"));
        }
    }
}

fn shell_words(value: &str) -> Vec<String> {
    command::split(&value.replace('\n', " "))
        .into_iter()
        .flat_map(|seg| seg.words)
        .collect()
}

// ---- INI (pytest.ini, tox.ini, setup.cfg) ----

fn ini_selections(text: &str, s: &mut Selections) {
    for (section, key, value) in ini_entries(text) {
        if matches!(section.as_str(), "pytest" | "tool:pytest") {
            pytest_key(&key, ini_words(&key, &value), s);
        } else if (section == "testenv" || section.starts_with("testenv:")) && key == "commands" {
            for line in value.lines() {
                command_selections("commands", line, s);
            }
        }
    }
}

/// An INI value as pytest reads it: `addopts` as a shell line, lists split on whitespace.
fn ini_words(key: &str, value: &str) -> Vec<String> {
    if key == "addopts" {
        shell_words(value)
    } else {
        value.split_whitespace().map(str::to_string).collect()
    }
}

// ---- TOML (pyproject.toml, Cargo.toml) ----

fn pyproject_selections(text: &str, s: &mut Selections) {
    for (table, key, value) in toml_entries(text) {
        match table.as_str() {
            "tool.pytest.ini_options" | "tool.pytest" => {
                let words = match (&value, key.as_str()) {
                    (Toml::Str(v), "addopts") => shell_words(v),
                    (Toml::Str(v), _) => v.split_whitespace().map(str::to_string).collect(),
                    (v, _) => v.strings(),
                };
                pytest_key(&key, words, s);
            }
            "tool.tox" if key == "legacy_tox_ini" => {
                if let Toml::Str(ini) = &value {
                    ini_selections(ini, s);
                }
            }
            t if (t == "tool.tox.env_run_base" || t.starts_with("tool.tox.env.")) && key == "commands" => {
                // `commands = [["pytest", "-k", "add"]]`: each inner array is one command's words.
                if let Toml::Arr(commands) = &value {
                    for c in commands {
                        let words = c.strings();
                        let line = words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
                        command_selections("commands", &line, s);
                    }
                }
            }
            _ => {}
        }
    }
}

fn shell_quote(w: &str) -> String {
    if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c)) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// `[lib] test = false`, `[package] autotests = false`, `doctest = false`, a test target's
/// `required-features`.
fn cargo_selections(text: &str, s: &mut Selections) {
    for (table, key, value) in toml_entries(text) {
        match (key.as_str(), &value) {
            ("test" | "doctest" | "autotests", Toml::Other(v)) if v == "false" => {
                s.exclude.push(format!("{table}.{key} = false"))
            }
            ("required-features", v) if table == "test" => s
                .exclude
                .extend(v.strings().into_iter().map(|f| format!("test.required-features: {f}"))),
            _ => {}
        }
    }
}

// ---- JavaScript / JSON objects (jest, vitest, mocha, package.json) ----

/// Ancestors under which a key is not about which tests run (`coverage.exclude`).
const NOT_SELECTION: &[&str] = &[
    "coverage",
    "optimizeDeps",
    "server",
    "build",
    "resolve",
    "deps",
    "css",
    "typecheck",
    "benchmark",
    "watch",
    "ssr",
    "worker",
    "watchPathIgnorePatterns",
];

fn js_selection(kind: Config, path: &[String], values: &[String], s: &mut Selections) {
    let Some(key) = path.last() else { return };
    let ancestors = &path[..path.len() - 1];
    if ancestors.iter().any(|a| NOT_SELECTION.contains(&a.as_str())) {
        return;
    }
    // package.json: only its `jest` and `mocha` keys and its test scripts.
    let (tool, key) = match kind {
        Config::PackageJson => match ancestors.first().map(String::as_str) {
            Some("jest") => (Config::Jest, key.as_str()),
            Some("mocha") => (Config::Mocha, key.as_str()),
            Some("scripts") if ancestors.len() == 1 && (key == "test" || key.starts_with("test:")) => {
                for v in values {
                    command_selections(&format!("scripts.{key}"), v, s);
                }
                return;
            }
            _ => return,
        },
        other => (other, key.as_str()),
    };
    let (exclude, include): (&[&str], &[&str]) = match tool {
        Config::Jest => (
            &[
                "testPathIgnorePatterns",
                "modulePathIgnorePatterns",
                "testNamePattern",
                "onlyChanged",
                "onlyFailures",
            ],
            &["testMatch", "testRegex", "roots"],
        ),
        Config::Vitest => (&["exclude", "testNamePattern"], &["include"]),
        Config::Mocha => (&["grep", "fgrep", "ignore", "exclude", "invert"], &["spec"]),
        _ => (&[], &[]),
    };
    if exclude.contains(&key) {
        s.exclude
            .extend(values.iter().filter(|v| *v != "false").map(|v| format!("{key}: {v}")));
    } else if include.contains(&key) {
        s.include.extend(values.iter().map(|v| (key.to_string(), v.clone())));
    }
}

// ---- conftest.py ----

/// Deselections a `conftest.py` makes in code (its skip markers count with the test files'):
/// `collect_ignore` entries, `pytest_ignore_collect`, items removed in
/// `pytest_collection_modifyitems`, `pytest_deselected`.
pub(super) fn conftest_deselections(code: &str) -> u64 {
    static RE: OnceLock<(Regex, Regex)> = OnceLock::new();
    // Literal patterns, compiled by the tests: they cannot fail at run time.
    #[allow(clippy::expect_used)]
    let (ignore, hooks) = RE.get_or_init(|| {
        (
            Regex::new(r"\bcollect_ignore(?:_glob)?\b").expect("constant regex"),
            Regex::new(
                r"\bdef\s+pytest_ignore_collect\b|\bpytest_deselected\b|\bitems\.(?:remove|pop|clear)\s*\(|\bitems\[[^\]]*\]\s*=|\bdel\s+items\[",
            )
            .expect("constant regex"),
        )
    });
    let mut n = hooks.find_iter(code).count() as u64;
    for m in ignore.find_iter(code) {
        // `collect_ignore = ["a.py", "b.py"]`, `collect_ignore.append("a.py")`: one per entry.
        let rest = &code[m.end()..];
        let stmt = python_statement(rest);
        let strings = stmt.bytes().filter(|b| *b == b'"' || *b == b'\'').count() as u64 / 2;
        n += strings.max(1);
    }
    n
}

/// The statement `rest` continues, through open brackets (at most a kilobyte: an
/// unclosed bracket must not make every match read the rest of the file).
fn python_statement(rest: &str) -> &str {
    let bytes = &rest.as_bytes()[..rest.len().min(MAX_STATEMENT)];
    let mut depth = 0i32;
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            // A newline is one byte of its own in UTF-8: a boundary.
            b'\n' if depth <= 0 => return &rest[..i],
            _ => {}
        }
    }
    &rest[..floor_char_boundary(rest, MAX_STATEMENT)]
}

const MAX_STATEMENT: usize = 1024;

fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
#[path = "test_config_tests.rs"]
mod tests;
