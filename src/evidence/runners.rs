//! Recognising verification runs in a shell command line: test runners, build, lint and
//! type-check commands, and the commands a project declares (settings `verification.commands`,
//! a "Build and Test Commands" section of CLAUDE.md / AGENTS.md). Pure functions.

use super::command::{self, Connector, Segment};

/// What kind of evidence a run gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Executes tests: counts of executed, passed, failed, skipped.
    Test,
    /// Compiles: errors.
    Build,
    /// Lints or type-checks: errors.
    Lint,
}

/// The program whose output format a parser knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runner {
    Pytest,
    Unittest,
    CargoTest,
    Nextest,
    GoTest,
    Gotestsum,
    Jest,
    Vitest,
    Mocha,
    NodeTest,
    BunTest,
    Rspec,
    Minitest,
    Phpunit,
    Maven,
    Gradle,
    Dotnet,
    Ctest,
    /// `npm test`, `make check`, tox, a declared command: whatever runner it starts.
    Script,
    Cargo,
    GoBuild,
    Tsc,
    Eslint,
    Ruff,
    Mypy,
    Pyright,
    Flake8,
}

impl Runner {
    /// The status the runner exits with when tests fail (for a status a pipeline hid).
    pub fn failure_exit(self) -> i32 {
        match self {
            Runner::CargoTest | Runner::Nextest => 101,
            Runner::Ctest => 8,
            Runner::Script => 2,
            _ => 1,
        }
    }

    /// The status the runner exits with when it found no tests, where it has its own.
    pub fn no_tests_exit(self) -> i32 {
        match self {
            Runner::Pytest => 5,
            Runner::Nextest => 4,
            Runner::Jest | Runner::Vitest => 1,
            _ => 0,
        }
    }

    /// Whether one invocation prints one summary (so more summaries than invocations mean the
    /// output holds something else), or one per package, binary, module or assembly.
    pub fn single_summary(self) -> bool {
        !matches!(
            self,
            Runner::CargoTest
                | Runner::GoTest
                | Runner::Maven
                | Runner::Gradle
                | Runner::Dotnet
                | Runner::Script
                | Runner::Cargo
                | Runner::GoBuild
                | Runner::Flake8
                | Runner::Tsc
                | Runner::Eslint
        )
    }
}

/// One verification run found in a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognised {
    pub runner: Runner,
    pub kind: Kind,
    /// Index of the segment in [`command::split`]'s result.
    pub segment: usize,
    /// The simple command as written (words joined by spaces).
    pub text: String,
    /// Whether the shell's exit status is this command's when it fails: only `&&` follows it.
    pub exit_visible: bool,
    /// Whether a later part of the line may change files (so changes the line made may postdate
    /// the run).
    pub mutation_after: bool,
}

/// The whole line's reading.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    pub runs: Vec<Recognised>,
    /// Every part that is not a run only observes (cd, echo, tail, tee…): changes the line made
    /// came from the runs themselves (snapshots, logs), not from work on the code.
    pub only_observes: bool,
}

/// Programs that neither change the workspace nor run code of the project (for deciding whether
/// a change made by a line came from a verification run or from work). `tee` and redirections
/// write only their own log files.
const OBSERVERS: &[&str] = &[
    "cd",
    "pushd",
    "popd",
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "tail",
    "head",
    "grep",
    "egrep",
    "rg",
    "tee",
    "cat",
    "wc",
    "sort",
    "uniq",
    "cut",
    "less",
    "more",
    "column",
    "jq",
    "date",
    "pwd",
    "ls",
    "test",
    "[",
    "sleep",
    "export",
    "set",
    "source",
    ".",
    "which",
    "command",
    "type",
    "env",
    "exit",
    "tr",
    "awk",
    "nl",
    "for",
    "case",
    "esac",
    "in",
    "git status",
    "git diff",
    "git log",
    "git show",
];

/// Programs a project may not declare as its test command: they print whatever they are given
/// or whatever a file holds (a repository could otherwise make `ls` print "5 passed, 0 failed").
const NOT_DECLARABLE: &[&str] = &["printf", "false", "yes", "eval", "exec", "xargs", "find", "git", "head"];

/// Interpreters: declarable only with the script they run (`python tests/run.py`), never alone.
const INTERPRETERS: &[&str] = &[
    "python", "python3", "node", "ruby", "perl", "php", "sh", "bash", "zsh", "npx", "deno", "bun",
];

/// Commands the project declared (from settings and instruction files), as word lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    commands: Vec<Vec<String>>,
}

impl Declared {
    /// Keeps the usable commands; returns why the others were refused.
    pub fn new<I: IntoIterator<Item = String>>(commands: I) -> (Declared, Vec<String>) {
        let mut out = Declared::default();
        let mut refused = Vec::new();
        for c in commands {
            let segs = command::split(&c);
            let [seg] = segs.as_slice() else {
                if !segs.is_empty() {
                    refused.push(format!(
                        "`{c}`: declare one command per entry, not a pipeline or a list"
                    ));
                }
                continue;
            };
            let words = strip_wrappers(&seg.words);
            let Some(first) = words.first() else { continue };
            let bare = !first.contains('/');
            if bare && (NOT_DECLARABLE.contains(&first.as_str()) || OBSERVERS.contains(&first.as_str())) {
                refused.push(format!(
                    "`{c}`: `{first}` prints whatever it is given or finds, so it cannot stand for a test run"
                ));
                continue;
            }
            if bare && INTERPRETERS.contains(&first.as_str()) && words.len() < 2 {
                refused.push(format!("`{c}`: declare the script `{first}` runs, not `{first}` alone"));
                continue;
            }
            if !out.commands.contains(&words) {
                out.commands.push(words);
            }
        }
        (out, refused)
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether `words` (wrappers stripped) start with a declared command.
    fn matches(&self, words: &[String]) -> bool {
        self.commands.iter().any(|d| {
            words.len() >= d.len()
                && d.iter()
                    .zip(words)
                    .enumerate()
                    .all(|(i, (a, b))| a == b || (i == 0 && command::base_name(a) == command::base_name(b)))
        })
    }
}

/// Reads a command line.
pub fn recognise(line: &str, declared: &Declared) -> Reading {
    recognise_split(&command::split(line), declared)
}

/// Reads a command line already split (a call's [`crate::shell::plan::CommandPlan`]).
pub fn recognise_split(segments: &[Segment], declared: &Declared) -> Reading {
    let mut reading = Reading {
        runs: Vec::new(),
        only_observes: true,
    };
    let mut is_run = vec![false; segments.len()];
    for (i, seg) in segments.iter().enumerate() {
        let words = strip_wrappers(&seg.words);
        if let Some(nested) = shell_c(&words) {
            // `sh -c '…'`: the nested line's runs, seen as this segment.
            let inner = recognise(&nested, declared);
            for r in inner.runs {
                is_run[i] = true;
                reading.runs.push(Recognised { segment: i, ..r });
            }
            reading.only_observes &= inner.only_observes;
            continue;
        }
        if let Some((runner, kind)) = classify(&words, declared) {
            is_run[i] = true;
            reading.runs.push(Recognised {
                runner,
                kind,
                segment: i,
                text: seg.words.join(" "),
                exit_visible: false,
                mutation_after: false,
            });
        } else if !observes(&words) {
            reading.only_observes = false;
        }
    }
    let mutating: Vec<bool> = segments
        .iter()
        .enumerate()
        .map(|(i, s)| !is_run[i] && !observes(&strip_wrappers(&s.words)))
        .collect();
    for r in &mut reading.runs {
        r.exit_visible = exit_reaches_shell(segments, r.segment);
        r.mutation_after = mutating[r.segment + 1..].iter().any(|m| *m);
    }
    reading
}

/// Whether the status of segment `i` is the line's status when it fails: every connector from
/// it to the end is `&&` (a failing command stops the chain there).
pub fn exit_reaches_shell(segments: &[Segment], i: usize) -> bool {
    segments[i..]
        .iter()
        .all(|s| matches!(s.next, Connector::And | Connector::End))
}

pub fn observes(words: &[String]) -> bool {
    let Some(first) = words.first() else { return true };
    let name = command::base_name(first);
    if name == "git" {
        let sub = words.get(1).map(String::as_str).unwrap_or("");
        return OBSERVERS.contains(&format!("git {sub}").as_str());
    }
    if name == "sed" {
        return !words.iter().any(|w| w.starts_with("-i") || w == "--in-place");
    }
    // A variable assignment alone (`FOO=1`).
    if words.len() == 1 && first.contains('=') && !first.starts_with('=') {
        return true;
    }
    OBSERVERS.contains(&name)
}

/// Drops leading assignments and wrappers that run the rest as a command (`env X=1`, `sudo`,
/// `timeout 60`, `uv run`, `npx`, `bundle exec`…) and turns `python -m X` into `X`.
pub fn strip_wrappers(words: &[String]) -> Vec<String> {
    let mut w: &[String] = words;
    while let Some(first) = w.first() {
        let name = command::base_name(first);
        let is_assignment = first.contains('=') && !first.starts_with('-') && !first.starts_with('=');
        let skip = if is_assignment {
            1
        } else {
            match name {
                "sudo" | "doas" | "nohup" | "command" | "exec" | "time" | "xvfb-run" | "catchsegv" | "stdbuf" => {
                    1 + options(&w[1..])
                }
                "env" | "cross-env" => 1 + options(&w[1..]),
                "nice" | "ionice" => 1 + options_with_values(&w[1..], &["-n", "-c"]),
                "timeout" => {
                    let opts = options_with_values(&w[1..], &["-s", "-k", "--signal", "--kill-after"]);
                    2 + opts
                }
                "npx" | "bunx" | "pnpx" => 1 + options(&w[1..]),
                "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye" if w.get(1).is_some_and(|s| s == "run") => {
                    2 + options_with_values(&w[2..], &["--with", "--python", "-p", "--env", "-e"])
                }
                "bundle" | "pnpm" | "yarn" if w.get(1).is_some_and(|s| s == "exec") => 2,
                "dotenv" if w.contains(&"--".to_string()) => w.iter().position(|s| s == "--").map_or(0, |p| p + 1),
                _ => 0,
            }
        };
        if skip == 0 || skip > w.len() {
            break;
        }
        w = &w[skip..];
    }
    let mut out: Vec<String> = w.to_vec();
    // python -m pytest → pytest; python3.12 -m unittest → unittest
    if let Some(first) = out.first()
        && is_python(command::base_name(first))
    {
        let opts = out[1..].iter().take_while(|a| a.starts_with('-') && *a != "-m").count();
        if out.get(1 + opts).is_some_and(|a| a == "-m") && out.len() > 2 + opts {
            let module = out[2 + opts].clone();
            let mut rest = vec![format!("python -m {module}")];
            rest.extend(out[3 + opts..].iter().cloned());
            out = rest;
        }
    }
    out
}

fn is_python(name: &str) -> bool {
    name == "python"
        || name == "python3"
        || name == "py"
        || name
            .strip_prefix("python3.")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit()))
}

/// Leading options (`-x`, `--flag`, `VAR=1` for env).
fn options(w: &[String]) -> usize {
    w.iter()
        .take_while(|a| a.starts_with('-') || (a.contains('=') && !a.starts_with('=')))
        .count()
}

fn options_with_values(w: &[String], with_value: &[&str]) -> usize {
    let mut i = 0;
    while i < w.len() && w[i].starts_with('-') {
        if with_value.contains(&w[i].as_str()) {
            i += 1;
        }
        i += 1;
    }
    i.min(w.len())
}

/// The line given to `sh -c`/`bash -c`.
pub fn shell_c(words: &[String]) -> Option<String> {
    let name = command::base_name(words.first()?);
    if !matches!(name, "sh" | "bash" | "zsh" | "dash") {
        return None;
    }
    let c = words
        .iter()
        .position(|w| w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.ends_with('c')))?;
    words.get(c + 1).cloned()
}

/// Which runner a simple command (wrappers stripped) is, if any.
fn classify(words: &[String], declared: &Declared) -> Option<(Runner, Kind)> {
    let first = words.first()?;
    let name = command::base_name(first);
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let sub = first_positional(&args);
    let found = match name {
        "pytest" | "py.test" | "python -m pytest" | "python -m py.test" => Some((Runner::Pytest, Kind::Test)),
        "python -m unittest" | "python -m django" if name.ends_with("unittest") || sub == Some("test") => {
            Some((Runner::Unittest, Kind::Test))
        }
        "python -m mypy" | "mypy" | "dmypy" => Some((Runner::Mypy, Kind::Lint)),
        "python -m ruff" | "ruff" if sub != Some("format") || args.contains(&"--check") => {
            Some((Runner::Ruff, Kind::Lint))
        }
        "python -m flake8" | "flake8" => Some((Runner::Flake8, Kind::Lint)),
        "pyright" | "basedpyright" => Some((Runner::Pyright, Kind::Lint)),
        "python -m tox" | "tox" | "nox" | "python -m nox" => Some((Runner::Script, Kind::Test)),
        n if is_python(n) && sub.is_some_and(|s| s.ends_with("manage.py")) && positional(&args, 1) == Some("test") => {
            Some((Runner::Unittest, Kind::Test))
        }
        "cargo" => cargo(&args),
        "cargo-nextest" => Some((Runner::Nextest, Kind::Test)),
        "go" => match sub {
            Some("test") => Some((Runner::GoTest, Kind::Test)),
            Some("build" | "vet") => Some((Runner::GoBuild, Kind::Build)),
            _ => None,
        },
        "gotestsum" => Some((Runner::Gotestsum, Kind::Test)),
        "golangci-lint" => Some((Runner::GoBuild, Kind::Lint)),
        "jest" => Some((Runner::Jest, Kind::Test)),
        "vitest" if !matches!(sub, Some("bench" | "init")) => Some((Runner::Vitest, Kind::Test)),
        "mocha" | "_mocha" => Some((Runner::Mocha, Kind::Test)),
        "node" if args.contains(&"--test") => Some((Runner::NodeTest, Kind::Test)),
        "bun" if sub == Some("test") => Some((Runner::BunTest, Kind::Test)),
        "npm" | "pnpm" | "yarn" | "bun" => package_script(&args),
        "tsc" | "vue-tsc" => Some((Runner::Tsc, Kind::Lint)),
        "eslint" => Some((Runner::Eslint, Kind::Lint)),
        "rspec" => Some((Runner::Rspec, Kind::Test)),
        "rake" | "rails" if matches!(sub, Some("test" | "spec")) || sub.is_some_and(|s| s.starts_with("test:")) => {
            Some((
                if sub == Some("spec") {
                    Runner::Rspec
                } else {
                    Runner::Minitest
                },
                Kind::Test,
            ))
        }
        "ruby" if args.iter().any(|a| a.ends_with("_test.rb") || a.contains("test/")) => {
            Some((Runner::Minitest, Kind::Test))
        }
        "phpunit" | "pest" => Some((Runner::Phpunit, Kind::Test)),
        "php"
            if args.iter().any(|a| a.ends_with("phpunit"))
                || (sub == Some("artisan") && positional(&args, 1) == Some("test")) =>
        {
            Some((Runner::Phpunit, Kind::Test))
        }
        "mvn" | "mvnw" | "mvnd" => maven(&args),
        "gradle" | "gradlew" => gradle(&args),
        "dotnet" => match sub {
            Some("test") => Some((Runner::Dotnet, Kind::Test)),
            Some("build") => Some((Runner::Dotnet, Kind::Build)),
            _ => None,
        },
        "ctest" => Some((Runner::Ctest, Kind::Test)),
        "make" | "gmake" | "ninja" | "just" | "task" => make(&args),
        _ => None,
    };
    if found.is_some() {
        return found;
    }
    declared.matches(words).then_some((Runner::Script, Kind::Test))
}

/// The first argument that is not an option.
fn first_positional<'a>(args: &[&'a str]) -> Option<&'a str> {
    positional(args, 0)
}

fn positional<'a>(args: &[&'a str], n: usize) -> Option<&'a str> {
    args.iter()
        .filter(|a| !a.starts_with('-') && !a.starts_with('+'))
        .nth(n)
        .copied()
}

fn cargo(args: &[&str]) -> Option<(Runner, Kind)> {
    match first_positional(args)? {
        "test" | "t" => Some((Runner::CargoTest, Kind::Test)),
        "nextest" => Some((Runner::Nextest, Kind::Test)),
        "build" | "b" | "check" | "c" => Some((Runner::Cargo, Kind::Build)),
        "clippy" => Some((Runner::Cargo, Kind::Lint)),
        _ => None,
    }
}

fn package_script(args: &[&str]) -> Option<(Runner, Kind)> {
    let sub = first_positional(args)?;
    let script = match sub {
        "run" | "run-script" => positional(args, 1)?,
        other => other,
    };
    let base = script.split(':').next().unwrap_or(script);
    match base {
        "test" | "t" | "tests" | "spec" | "e2e" | "coverage" => Some((Runner::Script, Kind::Test)),
        "lint" | "typecheck" | "type-check" | "tsc" | "check" | "types" => Some((Runner::Script, Kind::Lint)),
        "build" | "compile" => Some((Runner::Script, Kind::Build)),
        _ => None,
    }
}

fn maven(args: &[&str]) -> Option<(Runner, Kind)> {
    let goals: Vec<&str> = args.iter().filter(|a| !a.starts_with('-')).copied().collect();
    if goals.iter().any(|g| {
        matches!(
            *g,
            "test" | "verify" | "install" | "package" | "integration-test" | "surefire:test"
        )
    }) {
        Some((Runner::Maven, Kind::Test))
    } else if goals.iter().any(|g| matches!(*g, "compile" | "test-compile")) {
        Some((Runner::Maven, Kind::Build))
    } else {
        None
    }
}

fn gradle(args: &[&str]) -> Option<(Runner, Kind)> {
    let tasks: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|t| t.rsplit(':').next().unwrap_or(t))
        .collect();
    if tasks
        .iter()
        .any(|t| matches!(*t, "test" | "check" | "build" | "connectedCheck") || t.ends_with("Test"))
    {
        Some((Runner::Gradle, Kind::Test))
    } else if tasks
        .iter()
        .any(|t| matches!(*t, "assemble" | "compileJava" | "compileKotlin" | "classes"))
    {
        Some((Runner::Gradle, Kind::Build))
    } else {
        None
    }
}

fn make(args: &[&str]) -> Option<(Runner, Kind)> {
    // `make -C dir -j4 test`: options and their values are not targets.
    let mut targets = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if matches!(a, "-C" | "-f" | "-o" | "-W" | "--directory" | "--file")
            && !args.get(i + 1).is_some_and(|n| n.starts_with('-'))
        {
            i += 2;
            continue;
        }
        if !a.starts_with('-') && !a.contains('=') {
            targets.push(a);
        }
        i += 1;
    }
    if targets.iter().any(|t| {
        matches!(
            *t,
            "test" | "tests" | "check" | "spec" | "unittest" | "integration" | "test-all"
        ) || t.starts_with("test-")
            || t.starts_with("test_")
    }) {
        Some((Runner::Script, Kind::Test))
    } else if targets.iter().any(|t| matches!(*t, "lint" | "typecheck")) {
        Some((Runner::Script, Kind::Lint))
    } else {
        None
    }
}

#[cfg(test)]
#[path = "runners_tests.rs"]
mod tests;
