//! What a script runs: the body of an `npm test` script, a Makefile target (with its
//! prerequisites), tox's commands and a shell script run as `sh scripts/check.sh`, read from the
//! project's files so the ledger judges the programs a test command really starts — an
//! `npm test` that only echoes "Tests: 2 passed" runs no tests, and an undeclared script that
//! runs pytest is a test run.
//!
//! Only reading: files are opened with a size cap (never a FIFO or a device a repository
//! planted), nothing is executed. A body keel cannot find or read leaves the run as it was.

use std::path::{Path, PathBuf};

use super::command::{self, Connector, Segment};
use super::runners::{self, Declared, Reading, Recognised, Runner};
use crate::fsutil::open::read_file_capped;

/// Project files larger than this are not read for script bodies.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024;
/// Bodies read for one command line, counting a file read again (a script that runs itself
/// many times must not cost more than this).
const MAX_BODIES: u32 = 16;

thread_local! {
    /// Bodies still allowed for the line being read, and the files already read for it.
    static BUDGET: std::cell::RefCell<(u32, std::collections::HashMap<PathBuf, Option<String>>)> =
        std::cell::RefCell::new((0, std::collections::HashMap::new()));
}
/// `npm test` → `make check` → `sh run.sh`: bodies are followed this deep.
const MAX_DEPTH: usize = 3;

/// The body of one script a command line runs, read through.
#[derive(Debug, Clone, PartialEq)]
pub struct Expanded {
    /// Where the body came from: ``package.json script `test` ``, ``Makefile target `check` ``.
    pub source: String,
    /// The body as one command line (recipes joined as the tool runs them).
    pub body: String,
    pub segments: Vec<Segment>,
    /// The runs inside the body (bodies of nested scripts read through too).
    pub inner: Reading,
}

impl Expanded {
    /// The body runs no runner and only prints (echo, printf, cat): it runs no tests.
    pub fn only_prints(&self) -> bool {
        self.inner.runs.is_empty() && self.inner.only_observes
    }

    /// The runner whose output format the body's report follows (its first test run, else its
    /// first run).
    pub fn inner_runner(&self) -> Option<&Recognised> {
        self.inner
            .runs
            .iter()
            .find(|r| r.kind == runners::Kind::Test)
            .or_else(|| self.inner.runs.first())
    }

    /// Whether every inner runner's status reaches the script's own.
    pub fn exit_visible(&self) -> bool {
        self.inner.runs.iter().all(|r| r.exit_visible)
    }
}

/// Reads `line`'s runs with script bodies read through: a recognised script run (`npm test`,
/// `make check`, tox) gets its body; an unrecognised `sh FILE` / `bash FILE` / `./FILE` whose
/// body runs a test runner becomes a run. Returns the reading and, per run, its body.
/// Synchronous file reads: call it off the async runtime.
pub fn read_line(segments: &[Segment], declared: &Declared, cwd: &Path) -> (Reading, Vec<Option<Expanded>>) {
    BUDGET.with(|b| *b.borrow_mut() = (MAX_BODIES, std::collections::HashMap::new()));
    let out = read_at(segments, declared, cwd, 0);
    BUDGET.with(|b| b.borrow_mut().1.clear());
    out
}

fn read_at(segments: &[Segment], declared: &Declared, cwd: &Path, depth: usize) -> (Reading, Vec<Option<Expanded>>) {
    let mut reading = runners::recognise_split(segments, declared);
    let mut bodies: Vec<Option<Expanded>> = vec![None; reading.runs.len()];
    if depth >= MAX_DEPTH {
        return (reading, bodies);
    }
    let dirs = segment_dirs(segments, cwd);
    for (i, r) in reading.runs.iter().enumerate() {
        if r.runner == Runner::Script {
            let words = runners::strip_wrappers(&segments[r.segment].words);
            bodies[i] = body_of(&words, &dirs[r.segment], declared, depth);
        }
    }
    // `sh scripts/check.sh`: a run when what it runs is one.
    let known: Vec<usize> = reading.runs.iter().map(|r| r.segment).collect();
    let mut added = false;
    for (i, seg) in segments.iter().enumerate() {
        if known.contains(&i) {
            continue;
        }
        let words = runners::strip_wrappers(&seg.words);
        let Some(found) = shell_script(&words, &dirs[i], declared, depth) else {
            continue;
        };
        let Some(inner) = found.inner_runner() else { continue };
        reading.runs.push(Recognised {
            runner: Runner::Script,
            kind: inner.kind,
            segment: i,
            text: seg.words.join(" "),
            exit_visible: false,
            mutation_after: false,
        });
        bodies.push(Some(found));
        added = true;
    }
    if added {
        let mut order: Vec<usize> = (0..reading.runs.len()).collect();
        order.sort_by_key(|&k| reading.runs[k].segment);
        reading.runs = order.iter().map(|&k| reading.runs[k].clone()).collect();
        bodies = order.iter().map(|&k| bodies[k].clone()).collect();
        let is_run: Vec<bool> = (0..segments.len())
            .map(|i| reading.runs.iter().any(|r| r.segment == i))
            .collect();
        let mutating: Vec<bool> = segments
            .iter()
            .enumerate()
            .map(|(i, s)| !is_run[i] && !runners::observes(&runners::strip_wrappers(&s.words)))
            .collect();
        for r in &mut reading.runs {
            r.exit_visible = runners::exit_reaches_shell(segments, r.segment);
            r.mutation_after = mutating[r.segment + 1..].iter().any(|m| *m);
        }
        reading.only_observes = !mutating.iter().any(|m| *m);
    }
    (reading, bodies)
}

/// A body's runs with the bodies of the scripts it runs read through: a nested script that only
/// prints runs nothing, one that runs runners stands for them (their status reaching the
/// outer script's only when both reach).
fn flatten(reading: Reading, bodies: Vec<Option<Expanded>>) -> Reading {
    let mut out = Reading {
        runs: Vec::new(),
        only_observes: reading.only_observes,
    };
    for (r, body) in reading.runs.into_iter().zip(bodies) {
        match body {
            Some(b) if b.only_prints() => {}
            Some(b) if !b.inner.runs.is_empty() => {
                for inner in b.inner.runs {
                    out.runs.push(Recognised {
                        exit_visible: inner.exit_visible && r.exit_visible,
                        segment: r.segment,
                        mutation_after: r.mutation_after,
                        ..inner
                    });
                }
                out.only_observes &= b.inner.only_observes;
            }
            _ => out.runs.push(r),
        }
    }
    out
}

/// The directory each segment runs in, following `cd DIR` through the line (an approximation:
/// subshell scopes are not tracked; it only locates project files).
fn segment_dirs(segments: &[Segment], cwd: &Path) -> Vec<PathBuf> {
    let mut dir = cwd.to_path_buf();
    let mut out = Vec::with_capacity(segments.len());
    for s in segments {
        out.push(dir.clone());
        if s.words.first().is_some_and(|w| w == "cd" || w == "pushd")
            && let Some(to) = s.words.get(1)
        {
            dir = crate::fsutil::paths::resolve(&dir, to);
        }
    }
    out
}

fn body_of(words: &[String], dir: &Path, declared: &Declared, depth: usize) -> Option<Expanded> {
    let first = command::base_name(words.first()?);
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let (source, body, body_dir) = match first {
        "npm" | "pnpm" | "yarn" | "bun" => package_script(&args, dir)?,
        "make" | "gmake" => {
            let (source, lines, at) = make_target(&args, dir)?;
            return Some(recipes(source, &lines, &at, declared, depth));
        }
        "tox" | "python -m tox" => tox_commands(&args, dir)?,
        _ => return shell_script(words, dir, declared, depth),
    };
    Some(expanded(source, body, &body_dir, declared, depth))
}

/// A make target's recipe lines: each its own shell, make stopping at the first that fails
/// (unless the line starts with `-`), so a runner's status reaches make's when it reaches the
/// end of its own line.
fn recipes(source: String, lines: &[Recipe], dir: &Path, declared: &Declared, depth: usize) -> Expanded {
    let mut segments: Vec<Segment> = Vec::new();
    let mut inner = Reading {
        runs: Vec::new(),
        only_observes: true,
    };
    for (line, ignore_errors) in lines {
        let segs = command::split(line);
        let (reading, nested) = read_at(&segs, declared, dir, depth + 1);
        let reading = flatten(reading, nested);
        let offset = segments.len();
        for r in reading.runs {
            inner.runs.push(Recognised {
                segment: r.segment + offset,
                exit_visible: r.exit_visible && !ignore_errors,
                ..r
            });
        }
        inner.only_observes &= reading.only_observes;
        segments.extend(segs);
    }
    let body = lines.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>().join("\n");
    Expanded {
        source,
        body,
        segments,
        inner,
    }
}

fn expanded(source: String, body: String, dir: &Path, declared: &Declared, depth: usize) -> Expanded {
    let segments = command::split(&body);
    let (inner, nested) = read_at(&segments, declared, dir, depth + 1);
    let inner = flatten(inner, nested);
    Expanded {
        source,
        body,
        segments,
        inner,
    }
}

/// A project file's text: capped, regular files only, within the line's budget of bodies
/// (each file read once per line).
fn read_text(path: &Path) -> Option<String> {
    BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        if b.0 == 0 {
            return None;
        }
        b.0 -= 1;
        if let Some(known) = b.1.get(path) {
            return known.clone();
        }
        let text = read_file_capped(path, MAX_SCRIPT_BYTES)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok());
        b.1.insert(path.to_path_buf(), text.clone());
        text
    })
}

/// `npm test`, `npm run test:unit`, `yarn test`: the script with its `pre`/`post` scripts,
/// from the nearest package.json.
fn package_script(args: &[&str], dir: &Path) -> Option<(String, String, PathBuf)> {
    let positional: Vec<&str> = args.iter().copied().filter(|a| !a.starts_with('-')).collect();
    let name = match positional.first()? {
        &"run" | &"run-script" => *positional.get(1)?,
        other => other,
    };
    let (file, json) = dir.ancestors().take(8).find_map(|d| {
        let f = d.join("package.json");
        read_text(&f).map(|t| (f, t))
    })?;
    let value: serde_json::Value = serde_json::from_str(&json).ok()?;
    let scripts = value.get("scripts")?;
    let script = |n: &str| scripts.get(n).and_then(serde_json::Value::as_str).map(str::to_string);
    let main = script(name)?;
    let parts: Vec<String> = [
        script(&format!("pre{name}")),
        Some(main),
        script(&format!("post{name}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let at = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.to_path_buf());
    Some((format!("{} script `{name}`", file.display()), parts.join(" && "), at))
}

/// One recipe line and whether make ignores its failure (`-`).
type Recipe = (String, bool);

/// `make [-C dir] [-f file] target…`: the targets' recipe lines, prerequisites first, each with
/// whether make ignores its failure (`-`).
fn make_target(args: &[&str], dir: &Path) -> Option<(String, Vec<Recipe>, PathBuf)> {
    let mut dir = dir.to_path_buf();
    let mut file: Option<String> = None;
    let mut targets = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let attached = |long: &str, short: &str| {
            a.strip_prefix(long)
                .or_else(|| a.strip_prefix(short).filter(|v| !v.is_empty()))
                .map(str::to_string)
        };
        match a {
            "-C" | "--directory" => {
                dir = crate::fsutil::paths::resolve(&dir, args.get(i + 1)?);
                i += 2;
                continue;
            }
            "-f" | "--file" | "--makefile" => {
                file = Some(args.get(i + 1)?.to_string());
                i += 2;
                continue;
            }
            _ if a.starts_with("--directory=") || (a.starts_with("-C") && a.len() > 2) => {
                dir = crate::fsutil::paths::resolve(&dir, &attached("--directory=", "-C")?);
            }
            _ if a.starts_with("--file=") || a.starts_with("--makefile=") || (a.starts_with("-f") && a.len() > 2) => {
                file = attached("--file=", "-f").or_else(|| attached("--makefile=", "-f"));
            }
            a if a.starts_with('-') || a.contains('=') => {}
            a => targets.push(a.to_string()),
        }
        i += 1;
    }
    let path = match file {
        Some(f) => crate::fsutil::paths::resolve(&dir, &f),
        None => ["GNUmakefile", "makefile", "Makefile"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())?,
    };
    let text = read_text(&path)?;
    let rules = makefile_rules(&text);
    let mut lines = Vec::new();
    let mut seen = Vec::new();
    for t in &targets {
        recipe(&rules, t, &mut lines, &mut seen, 0);
    }
    if lines.is_empty() {
        return None;
    }
    Some((format!("{} target `{}`", path.display(), targets.join(" ")), lines, dir))
}

/// A Makefile's explicit rules: target → (prerequisites, recipe lines).
fn makefile_rules(text: &str) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut rules: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for line in text.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            for &k in &current {
                rules[k].2.push(recipe.to_string());
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        current.clear();
        let Some((head, rest)) = trimmed.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || head.contains('=') || head.contains('%') {
            continue;
        }
        let (prereqs, inline) = match rest.split_once(';') {
            Some((p, r)) => (p, Some(r.trim().to_string())),
            None => (rest, None),
        };
        let prereqs: Vec<String> = prereqs.split_whitespace().map(str::to_string).collect();
        for name in head.split_whitespace() {
            rules.push((name.to_string(), prereqs.clone(), inline.iter().cloned().collect()));
            current.push(rules.len() - 1);
        }
    }
    rules
}

fn recipe(
    rules: &[(String, Vec<String>, Vec<String>)],
    target: &str,
    out: &mut Vec<Recipe>,
    seen: &mut Vec<String>,
    depth: usize,
) {
    if depth > 8 || seen.iter().any(|s| s == target) {
        return;
    }
    seen.push(target.to_string());
    for (_, prereqs, lines) in rules.iter().filter(|r| r.0 == target) {
        for p in prereqs {
            recipe(rules, p, out, seen, depth + 1);
        }
        for l in lines {
            let l = l.trim();
            let ignore_errors = l.trim_start_matches(['@', '+']).starts_with('-');
            let l = l.trim_start_matches(['@', '-', '+']).trim();
            if !l.is_empty() {
                out.push((l.replace("$(MAKE)", "make").replace("${MAKE}", "make"), ignore_errors));
            }
        }
    }
}

/// tox's `commands` of its `[testenv]` section (tox.ini), joined as tox runs them.
fn tox_commands(args: &[&str], dir: &Path) -> Option<(String, String, PathBuf)> {
    // `tox -e name` runs `[testenv:name]`; several environments or a factor keel cannot map:
    // no body (the run is read as a script).
    let env = args
        .iter()
        .position(|a| *a == "-e")
        .and_then(|i| args.get(i + 1).map(|s| s.to_string()))
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("-e").filter(|v| !v.is_empty()).map(str::to_string))
        });
    let section = match &env {
        Some(e) if e.contains(',') => return None,
        Some(e) => format!("[testenv:{e}]"),
        None => "[testenv]".to_string(),
    };
    let path = dir.join("tox.ini");
    let text = read_text(&path)?;
    if env.is_some() && !text.lines().any(|l| l.trim() == section) {
        return None;
    }
    let mut in_testenv = false;
    let mut in_commands = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_testenv = t == section;
            in_commands = false;
            continue;
        }
        if !in_testenv {
            continue;
        }
        if let Some(rest) = t.strip_prefix("commands") {
            if let Some(v) = rest.trim_start().strip_prefix('=') {
                in_commands = true;
                if !v.trim().is_empty() {
                    lines.push(v.trim().to_string());
                }
            }
            continue;
        }
        if in_commands {
            if line.starts_with([' ', '\t']) && !t.is_empty() {
                lines.push(t.to_string());
            } else if !t.is_empty() {
                in_commands = false;
            }
        }
    }
    if lines.is_empty() {
        return None;
    }
    let body = lines
        .iter()
        .map(|l| l.replace("{posargs}", "").replace("{toxinidir}", "."))
        .collect::<Vec<_>>()
        .join(" && ");
    Some((format!("{} commands", path.display()), body, dir.to_path_buf()))
}

/// `sh FILE`, `bash -e FILE`, `./FILE` (a shell script by its first line): the script's text,
/// its commands joined as the shell runs them (`set -e` makes each failure stop it).
fn shell_script(words: &[String], dir: &Path, declared: &Declared, depth: usize) -> Option<Expanded> {
    let first = words.first()?;
    let name = command::base_name(first);
    let (file, errexit_flag) = if matches!(name, "sh" | "bash" | "dash" | "zsh") {
        let mut e = false;
        let mut script = None;
        for w in &words[1..] {
            if w.starts_with('-') {
                if w.contains('c') && !w.starts_with("--") {
                    return None;
                }
                e |= w.contains('e') && !w.starts_with("--");
                continue;
            }
            script = Some(w.clone());
            break;
        }
        (script?, e)
    } else if first.contains('/') {
        (first.clone(), false)
    } else {
        return None;
    };
    let path = crate::fsutil::paths::resolve(dir, &file);
    // A project's own scripts only (not `/usr/bin/…`), and only what can be a shell script.
    let ext = path.extension().and_then(|e| e.to_str());
    if !path.starts_with(dir) || !matches!(ext, None | Some("sh" | "bash")) {
        return None;
    }
    let text = read_text(&path)?;
    if !matches!(name, "sh" | "bash" | "dash" | "zsh") {
        let shebang = text.lines().next().unwrap_or("");
        if !(shebang.starts_with("#!") && ["sh", "bash", "dash"].iter().any(|s| shebang.contains(s))) {
            return None;
        }
    }
    let errexit = errexit_flag
        || text.lines().take(40).any(|l| {
            let l = l.trim();
            (l.starts_with("set -") && l.split_whitespace().nth(1).is_some_and(|f| f.contains('e')))
                || l.starts_with("set -o errexit")
                || (l.starts_with("#!")
                    && l.split_whitespace()
                        .skip(1)
                        .any(|f| f.starts_with('-') && f.contains('e')))
        });
    let mut segments = command::split(&text);
    if errexit {
        for s in &mut segments {
            if s.next == Connector::Seq {
                s.next = Connector::And;
            }
        }
    }
    let (inner, nested) = read_at(&segments, declared, dir, depth + 1);
    let inner = flatten(inner, nested);
    Some(Expanded {
        source: path.display().to_string(),
        body: text,
        segments,
        inner,
    })
}

#[cfg(test)]
#[path = "expand_tests.rs"]
mod tests;
