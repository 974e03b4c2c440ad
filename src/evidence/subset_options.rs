//! Each runner's options as far as selecting tests goes: which take a value, which select, how
//! its positional arguments read. Data for [`super`].

use super::super::runners::Runner;

/// How a runner's positional arguments select tests.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Positional {
    /// They name files, directories or packages: never a selection.
    Never,
    /// A pytest node id (`tests/test_a.py::test_x`).
    NodeId,
    /// Any positional after the first `skip` ones (subcommands) is a name filter (`cargo test add`).
    Filter { skip: usize },
    /// A unittest / Django dotted name that reaches into a module (`tests.test_a.TestA.test_x`).
    Dotted,
    /// A file with a line or an example id (`spec/a_spec.rb:12`, `spec/a_spec.rb[1:2]`).
    Location,
    /// A subcommand that selects (`vitest related src/a.ts`).
    Subcommand(&'static [&'static str]),
}

/// A runner's options, as far as selecting tests goes.
pub(super) struct Table {
    /// Options that select tests and take a value (`-k EXPR`, `--deselect=ID`).
    pub(super) select_valued: &'static [&'static str],
    /// Options that select tests on their own (`--lf`).
    pub(super) select_flags: &'static [&'static str],
    /// Options that only refine another selection (`--exact`).
    pub(super) modifiers: &'static [&'static str],
    /// Other options that take a value, so the value is not read as a positional argument.
    pub(super) valued: &'static [&'static str],
    /// `-D` properties that select (Maven's `test=`).
    pub(super) properties: &'static [&'static str],
    pub(super) positional: Positional,
}

const NONE: Table = Table {
    select_valued: &[],
    select_flags: &[],
    modifiers: &[],
    valued: &[],
    properties: &[],
    positional: Positional::Never,
};

const PYTEST: Table = Table {
    select_valued: &["-k", "-m", "--deselect", "--ignore", "--ignore-glob"],
    select_flags: &[
        "--lf",
        "--last-failed",
        "--sw",
        "--stepwise",
        "--sw-skip",
        "--stepwise-skip",
    ],
    valued: &[
        "-p",
        "-c",
        "-o",
        "-W",
        "-n",
        "-r",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--tb",
        "--junitxml",
        "--junit-xml",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--durations",
        "--maxfail",
        "--log-level",
        "--log-file",
        "--log-cli-level",
        "--capture",
        "--import-mode",
        "--color",
        "--override-ini",
        "--dist",
        "--timeout",
        "--reruns",
        "--count",
        "--html",
        "--doctest-glob",
        "--lfnf",
        "--last-failed-no-failures",
        "--numprocesses",
        "--maxprocesses",
        "--config-file",
        "--report-log",
        "--tx",
        "--rsyncdir",
    ],
    positional: Positional::NodeId,
    ..NONE
};

const UNITTEST: Table = Table {
    select_valued: &["-k", "--tag", "--exclude-tag"],
    valued: &[
        "-p",
        "-s",
        "-t",
        "--pattern",
        "--start-directory",
        "--top-level-directory",
        "--settings",
        "--parallel",
        "--pythonpath",
        "-v",
        "--verbosity",
        "--testrunner",
    ],
    positional: Positional::Dotted,
    ..NONE
};

const CARGO_TEST: Table = Table {
    valued: &[
        "-p",
        "--package",
        "--test",
        "--bench",
        "--bin",
        "--example",
        "-F",
        "--features",
        "-j",
        "--jobs",
        "--target",
        "--target-dir",
        "--manifest-path",
        "--profile",
        "--message-format",
        "--color",
        "-Z",
        "--config",
        "--exclude",
        "--lockfile-path",
    ],
    positional: Positional::Filter { skip: 1 },
    ..NONE
};

/// The test binary's own arguments, after `--`.
pub(super) const LIBTEST: Table = Table {
    select_valued: &["--skip"],
    select_flags: &["--ignored"],
    modifiers: &["--exact"],
    valued: &[
        "--test-threads",
        "--format",
        "--color",
        "--logfile",
        "-Z",
        "--shuffle-seed",
    ],
    positional: Positional::Filter { skip: 0 },
    ..NONE
};

const NEXTEST: Table = Table {
    select_valued: &["-E", "--filterset", "--filter-expr", "--skip", "--partition"],
    modifiers: &["--exact"],
    valued: &[
        "-p",
        "--package",
        "-j",
        "--test-threads",
        "--profile",
        "-P",
        "-F",
        "--features",
        "--target",
        "--manifest-path",
        "--retries",
        "--run-ignored",
    ],
    positional: Positional::Filter { skip: 2 },
    ..NONE
};

const GO: Table = Table {
    select_valued: &["-run", "--run", "-test.run", "-skip", "--skip", "-test.skip"],
    valued: &[
        "-timeout",
        "-count",
        "-p",
        "-parallel",
        "-cpu",
        "-tags",
        "-coverprofile",
        "-covermode",
        "-coverpkg",
        "-o",
        "-bench",
        "-benchtime",
        "-exec",
        "-vet",
        "-shuffle",
        "-C",
        "-mod",
        "-ldflags",
        "-gcflags",
        "--format",
        "-f",
        "--packages",
        "--jsonfile",
        "--junitfile",
    ],
    ..NONE
};

const JEST: Table = Table {
    select_valued: &[
        "-t",
        "--testNamePattern",
        "--changedSince",
        "--testPathIgnorePatterns",
        "--shard",
    ],
    select_flags: &[
        "-o",
        "--onlyChanged",
        "--lastCommit",
        "--onlyFailures",
        "-f",
        "--findRelatedTests",
    ],
    valued: &[
        "-c",
        "--config",
        "-w",
        "--maxWorkers",
        "--reporters",
        "--testTimeout",
        "--coverageDirectory",
        "--rootDir",
        "--roots",
        "--outputFile",
        "--seed",
        "--selectProjects",
        "--testPathPatterns",
        "--env",
        "--testEnvironment",
    ],
    ..NONE
};

const VITEST: Table = Table {
    select_valued: &["-t", "--testNamePattern", "--exclude", "--shard"],
    select_flags: &["--changed"],
    valued: &[
        "-c",
        "--config",
        "-r",
        "--root",
        "--dir",
        "--reporter",
        "--outputFile",
        "--pool",
        "--project",
        "--environment",
        "--maxWorkers",
        "--minWorkers",
        "--testTimeout",
        "--retry",
        "--mode",
    ],
    positional: Positional::Subcommand(&["related"]),
    ..NONE
};

const MOCHA: Table = Table {
    select_valued: &["-g", "--grep", "-f", "--fgrep", "--exclude", "--ignore"],
    modifiers: &["-i", "--invert"],
    valued: &[
        "-R",
        "--reporter",
        "-O",
        "--reporter-option",
        "-r",
        "--require",
        "-t",
        "--timeout",
        "--slow",
        "-s",
        "--ui",
        "-u",
        "--config",
        "--package",
        "--extension",
        "--spec",
        "-j",
        "--jobs",
    ],
    ..NONE
};

const NODE_TEST: Table = Table {
    select_valued: &["--test-name-pattern", "--test-skip-pattern", "--test-shard"],
    select_flags: &["--test-only"],
    valued: &[
        "--test-reporter",
        "--test-reporter-destination",
        "--test-concurrency",
        "--test-timeout",
        "-r",
        "--require",
        "--import",
        "--loader",
    ],
    ..NONE
};

const BUN_TEST: Table = Table {
    select_valued: &["-t", "--test-name-pattern"],
    select_flags: &["--only"],
    valued: &["--timeout", "--preload", "--rerun-each", "--coverage-dir", "--reporter"],
    ..NONE
};

const RSPEC: Table = Table {
    select_valued: &["-e", "--example", "-E", "--example-matches", "-t", "--tag"],
    select_flags: &["--only-failures", "--next-failure"],
    valued: &[
        "-f",
        "--format",
        "-o",
        "--out",
        "-r",
        "--require",
        "-I",
        "--seed",
        "--order",
        "-P",
        "--pattern",
        "--exclude-pattern",
        "--default-path",
        "--failure-exit-code",
    ],
    positional: Positional::Location,
    ..NONE
};

const MINITEST: Table = Table {
    select_valued: &["-n", "--name", "-e", "--exclude"],
    valued: &["-s", "--seed"],
    positional: Positional::Location,
    ..NONE
};

const PHPUNIT: Table = Table {
    select_valued: &["--filter", "--group", "--exclude-group", "--exclude-filter"],
    select_flags: &["--dirty"],
    valued: &[
        "-c",
        "--configuration",
        "--bootstrap",
        "--testsuite",
        "--log-junit",
        "--coverage-html",
        "--coverage-clover",
        "--cache-directory",
        "-d",
        "--order-by",
        "--random-order-seed",
        "--printer",
    ],
    ..NONE
};

const MAVEN: Table = Table {
    valued: &[
        "-pl",
        "--projects",
        "-f",
        "--file",
        "-s",
        "--settings",
        "-P",
        "--activate-profiles",
        "-T",
        "--threads",
        "-rf",
        "--resume-from",
    ],
    properties: &["test=", "it.test=", "groups=", "excludedGroups="],
    ..NONE
};

const GRADLE: Table = Table {
    select_valued: &["--tests"],
    valued: &[
        "-p",
        "--project-dir",
        "-b",
        "--build-file",
        "-c",
        "--settings-file",
        "--max-workers",
        "--console",
        "--warning-mode",
        "-I",
        "--init-script",
    ],
    ..NONE
};

const DOTNET: Table = Table {
    select_valued: &["--filter"],
    valued: &[
        "-c",
        "--configuration",
        "-f",
        "--framework",
        "-r",
        "--runtime",
        "-s",
        "--settings",
        "-l",
        "--logger",
        "-o",
        "--output",
        "-v",
        "--verbosity",
        "--results-directory",
        "-a",
        "--test-adapter-path",
        "--collect",
        "--blame-hang-timeout",
        "--environment",
        "-e",
        "--arch",
        "--os",
    ],
    ..NONE
};

const CTEST: Table = Table {
    select_valued: &[
        "-R",
        "--tests-regex",
        "-E",
        "--exclude-regex",
        "-L",
        "--label-regex",
        "-LE",
        "--label-exclude",
        "-I",
        "--tests-information",
    ],
    select_flags: &["--rerun-failed"],
    valued: &[
        "-C",
        "--build-config",
        "-j",
        "--parallel",
        "--test-dir",
        "--output-junit",
        "-O",
        "--output-log",
        "--timeout",
        "--repeat",
        "-S",
        "-D",
        "--stop-time",
        "--resource-spec-file",
    ],
    ..NONE
};

/// What a package script or tox passes on to the runner it starts (`npm test -- -t add`,
/// `tox -- -k add`): the selections common to the runners.
pub(super) const PASSED_ON: Table = Table {
    select_valued: &[
        "-k",
        "-m",
        "--deselect",
        "-t",
        "--testNamePattern",
        "-g",
        "--grep",
        "--filter",
        "-run",
        "--run",
        "--tests",
    ],
    select_flags: &["--lf", "--last-failed", "--onlyChanged", "--onlyFailures", "--changed"],
    positional: Positional::NodeId,
    ..NONE
};

pub(super) fn table(runner: Runner) -> &'static Table {
    match runner {
        Runner::Pytest => &PYTEST,
        Runner::Unittest => &UNITTEST,
        Runner::CargoTest => &CARGO_TEST,
        Runner::Nextest => &NEXTEST,
        Runner::GoTest | Runner::Gotestsum => &GO,
        Runner::Jest => &JEST,
        Runner::Vitest => &VITEST,
        Runner::Mocha => &MOCHA,
        Runner::NodeTest => &NODE_TEST,
        Runner::BunTest => &BUN_TEST,
        Runner::Rspec => &RSPEC,
        Runner::Minitest => &MINITEST,
        Runner::Phpunit => &PHPUNIT,
        Runner::Maven => &MAVEN,
        Runner::Gradle => &GRADLE,
        Runner::Dotnet => &DOTNET,
        Runner::Ctest => &CTEST,
        _ => &NONE,
    }
}
