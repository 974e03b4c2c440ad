use super::*;

fn added(name: &str, before: &str, after: &str) -> u64 {
    let kind = kind(Path::new(name)).unwrap_or_else(|| panic!("{name} is no test configuration"));
    added_deselections(kind, before, after)
}

#[test]
fn configuration_files_by_name() {
    for p in [
        "conftest.py",
        "tests/conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "jest.config.js",
        "jest.config.ts",
        "vitest.config.mts",
        "web/vitest.workspace.ts",
        ".mocharc.yml",
        ".mocharc.json",
        "package.json",
        "Cargo.toml",
    ] {
        assert!(kind(Path::new(p)).is_some(), "{p}");
    }
    for p in [
        "jest.setup.js",
        "vite.config.ts",
        "config.toml",
        "contest.py",
        "jest.config.js.bak",
    ] {
        assert!(kind(Path::new(p)).is_none(), "{p}");
    }
}

#[test]
fn pytest_ini_addopts_and_lists() {
    let ini = "[pytest]\naddopts = -q\ntestpaths = tests\n";
    assert_eq!(added("pytest.ini", ini, ini), 0);
    let deselect = "[pytest]\naddopts = -q --deselect tests/test_calc.py::TestCalc::test_add\ntestpaths = tests\n";
    assert_eq!(added("pytest.ini", ini, deselect), 1);
    assert_eq!(added("pytest.ini", deselect, ini), 0, "removing a deselection widens");
    assert_eq!(added("pytest.ini", "", deselect), 1, "a new file against nothing");
    let multi = "[pytest]\naddopts =\n    -q\n    -k 'not slow'\n    -m \"not db\"\n    --ignore=tests/e2e\n";
    assert_eq!(added("pytest.ini", ini, multi), 3);
    assert_eq!(
        added("pytest.ini", "", "[pytest]\naddopts = tests/test_a.py\n"),
        1,
        "a file narrows every run"
    );
    // A list of what runs that loses entries.
    let two = "[pytest]\ntestpaths = tests integration\n";
    assert_eq!(added("pytest.ini", two, "[pytest]\ntestpaths = tests\n"), 1);
    assert_eq!(added("pytest.ini", "", two), 0, "a new list is the project's choice");
    assert_eq!(
        added(
            "pytest.ini",
            "[pytest]\nnorecursedirs = .git\n",
            "[pytest]\nnorecursedirs = .git tests/slow\n"
        ),
        1
    );
    // Other sections and a comment say nothing.
    assert_eq!(added("setup.cfg", "", "[flake8]\nignore = E501\n# addopts = -k x\n"), 0);
    assert_eq!(added("setup.cfg", "", "[tool:pytest]\naddopts = -k add\n"), 1);
}

#[test]
fn tox_commands_and_pyproject() {
    let tox = "[tox]\nenvlist = py311\n\n[testenv]\ncommands =\n    pytest {posargs}\n";
    assert_eq!(added("tox.ini", tox, tox), 0);
    assert_eq!(
        added(
            "tox.ini",
            tox,
            &tox.replace("pytest {posargs}", "pytest -k add {posargs}")
        ),
        1
    );
    let py = "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\"tests\"]\n";
    assert_eq!(added("pyproject.toml", py, py), 0);
    let k = py.replace("addopts = \"-q\"", "addopts = \"-q -k 'not add'\"");
    assert_eq!(added("pyproject.toml", py, &k), 1);
    let list = py.replace(
        "addopts = \"-q\"",
        "addopts = [\n  \"-q\",\n  \"--deselect\", \"tests/a.py::t\",  # flaky\n]",
    );
    assert_eq!(added("pyproject.toml", py, &list), 1);
    let native = "[tool.pytest]\naddopts = [\"-m\", \"not slow\"]\n";
    assert_eq!(added("pyproject.toml", "", native), 1);
    let legacy = "[tool.tox]\nlegacy_tox_ini = \"\"\"\n[testenv]\ncommands = pytest --lf\n\"\"\"\n";
    assert_eq!(added("pyproject.toml", "", legacy), 1);
    let envs = "[tool.tox.env_run_base]\ncommands = [[\"pytest\", \"-k\", \"add\"]]\n";
    assert_eq!(added("pyproject.toml", "", envs), 1);
    // Other tables and a dependency change say nothing.
    assert_eq!(
        added(
            "pyproject.toml",
            py,
            &py.replace("name = \"x\"", "name = \"y\"\ndependencies = [\"-k\"]")
        ),
        0
    );
}

#[test]
fn javascript_configurations() {
    let jest = "module.exports = {\n  testEnvironment: 'node',\n  testPathIgnorePatterns: ['/node_modules/'],\n};\n";
    assert_eq!(added("jest.config.js", jest, jest), 0);
    let ignored = jest.replace("['/node_modules/']", "['/node_modules/', '<rootDir>/__tests__/slow']");
    assert_eq!(added("jest.config.js", jest, &ignored), 1);
    assert_eq!(
        added("jest.config.js", "", &ignored),
        1,
        "a new file against nothing (node_modules holds no tests)"
    );
    let name = "export default { testNamePattern: /^(?!adds)/ };\n";
    assert_eq!(added("jest.config.mjs", "", name), 1);
    let vitest = "import { defineConfig } from 'vitest/config'\nexport default defineConfig({\n  test: {\n    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],\n    coverage: { exclude: ['dist'] },\n  },\n})\n";
    assert_eq!(
        added("vitest.config.ts", "", vitest),
        0,
        "coverage exclusions select nothing"
    );
    let narrowed = vitest.replace(", 'test/**/*.test.ts'", "");
    assert_eq!(added("vitest.config.ts", vitest, &narrowed), 1);
    let excluded = vitest.replace("    coverage:", "    exclude: ['test/slow/**'],\n    coverage:");
    assert_eq!(added("vitest.config.ts", vitest, &excluded), 1);
    let projects = "export default defineConfig({ test: { projects: [{ test: { exclude: ['a/**'] } }] } })";
    assert_eq!(added("vitest.config.ts", "", projects), 1);
    let pkg = "{\n  \"name\": \"x\",\n  \"scripts\": {\"test\": \"jest\", \"build\": \"tsc\"},\n  \"jest\": {\"roots\": [\"src\"]}\n}\n";
    assert_eq!(added("package.json", pkg, pkg), 0);
    assert_eq!(
        added(
            "package.json",
            pkg,
            &pkg.replace("\"test\": \"jest\"", "\"test\": \"jest -t adds\"")
        ),
        1
    );
    assert_eq!(
        added(
            "package.json",
            pkg,
            &pkg.replace(
                "\"roots\": [\"src\"]",
                "\"roots\": [\"src\"], \"modulePathIgnorePatterns\": [\"slow\"]"
            )
        ),
        1
    );
    assert_eq!(
        added(
            "package.json",
            pkg,
            &pkg.replace("\"name\": \"x\"", "\"name\": \"y\", \"version\": \"-k\"")
        ),
        0
    );
    let mocharc = "spec: test/**/*.spec.js\n";
    assert_eq!(
        added(".mocharc.yml", mocharc, "spec: test/**/*.spec.js\ngrep: adds\n"),
        1
    );
    assert_eq!(
        added(
            ".mocharc.yml",
            mocharc,
            "spec: test/**/*.spec.js\nignore:\n  - test/slow.spec.js\n"
        ),
        1
    );
    assert_eq!(added(".mocharc.json", "", "{\"grep\": \"adds\", \"invert\": true}"), 2);
}

#[test]
fn cargo_targets_switched_off() {
    let cargo = "[package]\nname = \"x\"\n\n[dependencies]\nregex = \"1\"\n";
    assert_eq!(
        added("Cargo.toml", cargo, &cargo.replace("regex = \"1\"", "regex = \"2\"")),
        0
    );
    assert_eq!(
        added("Cargo.toml", cargo, &format!("{cargo}\n[lib]\ntest = false\n")),
        1
    );
    assert_eq!(
        added(
            "Cargo.toml",
            cargo,
            &cargo.replace("name = \"x\"", "name = \"x\"\nautotests = false")
        ),
        1
    );
    assert_eq!(
        added(
            "Cargo.toml",
            cargo,
            &format!("{cargo}\n[[test]]\nname = \"e2e\"\nrequired-features = [\"slow\"]\n")
        ),
        1
    );
}

#[test]
fn conftest_deselections_in_code() {
    assert_eq!(
        conftest_deselections("collect_ignore = [\"tests/test_a.py\", \"tests/test_b.py\"]\n"),
        2
    );
    assert_eq!(conftest_deselections("collect_ignore.append('x.py')\n"), 1);
    assert_eq!(conftest_deselections("collect_ignore_glob = ['*_slow.py']\n"), 1);
    let hook = "def pytest_collection_modifyitems(config, items):\n    for item in list(items):\n        if item.name == 'test_add':\n            items.remove(item)\n";
    assert_eq!(conftest_deselections(hook), 1);
    assert_eq!(
        conftest_deselections("def pytest_ignore_collect(collection_path, config):\n    return True\n"),
        1
    );
    assert_eq!(
        conftest_deselections("import pytest\n\n@pytest.fixture\ndef db():\n    return 1\n"),
        0
    );
}

#[test]
fn leaving_out_directories_that_hold_no_tests_is_no_deselection() {
    assert_eq!(
        added("pytest.ini", "", "[pytest]\nnorecursedirs = .git node_modules build\n"),
        0
    );
    assert_eq!(added("pytest.ini", "", "[pytest]\naddopts = -ra --ignore=docs\n"), 0);
    assert_eq!(
        added(
            "jest.config.js",
            "",
            "module.exports = { testPathIgnorePatterns: ['/node_modules/', '/dist/'] };\n"
        ),
        0
    );
    // A test directory left out still counts.
    assert_eq!(
        added("pytest.ini", "", "[pytest]\naddopts = --ignore=tests/test_calc.py\n"),
        1
    );
}
