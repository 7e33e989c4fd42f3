"""junit parsing, classification, signatures and summaries, on the output of real pytest runs."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.checks.classify import classify, environment_error, local_module_names
from bot.checks.junit import parse_junit
from bot.checks.signature import failure_signature, signature_text
from bot.checks.summary import fold_repeats, summarize
from bot.checks.traceback import frames, normalize
from bot.contract.models import SandboxConfig
from bot.sandbox.base import ExecResult
from tests.support.pytest_samples import CALC, SECRET, TEST_CALC, PytestRun, calc_repo, run_pytest, write_repo

LIMITS = SandboxConfig()


@dataclass
class Runs:
    base: PytestRun
    again: PytestRun
    shifted: PytestRun
    fixed: PytestRun
    missing: PytestRun
    local_import: PytestRun


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    base = calc_repo(tmp_path_factory.mktemp("base"))
    shifted = calc_repo(tmp_path_factory.mktemp("shifted"))
    write_repo(shifted, {"calc.py": "\n\n# moved down\n" + CALC, "tests/test_calc.py": "\n\n\n" + TEST_CALC})
    fixed = calc_repo(tmp_path_factory.mktemp("fixed"))
    write_repo(fixed, {"calc.py": CALC.replace("a - b", "a + b")})
    missing = write_repo(tmp_path_factory.mktemp("missing"), {"tests/test_missing.py": "import numpyxyz\n"})
    local = calc_repo(tmp_path_factory.mktemp("local"))
    write_repo(local, {"tests/test_local.py": "from calc import nope\n"})
    jobs = {
        "base": (base, "tests/test_calc.py"),
        "again": (base, "tests/test_calc.py"),
        "shifted": (shifted, "tests/test_calc.py"),
        "fixed": (fixed, "tests/test_calc.py"),
        "missing": (missing,),
        "local_import": (local, "tests/test_local.py"),
    }
    with ThreadPoolExecutor(4) as pool:
        futures = {name: pool.submit(run_pytest, *args) for name, args in jobs.items()}
        return Runs(**{name: f.result() for name, f in futures.items()})


def _exec(run: PytestRun) -> ExecResult:
    return ExecResult(exit_code=run.exit_code, output=run.output, duration_s=1.0)


# -- junit -------------------------------------------------------------------------------------


def test_junit_gives_pytest_node_ids_statuses_and_lines(runs: Runs) -> None:
    tests = {t.id: t for t in parse_junit(runs.base.junit, workdir=str(runs.base.root))}
    assert {i: t.status for i, t in tests.items()} == {
        "tests/test_calc.py::test_add": "fail",
        "tests/test_calc.py::TestDiv::test_div": "pass",
        "tests/test_calc.py::TestDiv::test_zero": "fail",
        "tests/test_calc.py::test_ok": "pass",
        "tests/test_calc.py::test_token": "fail",
    }
    add = tests["tests/test_calc.py::test_add"]
    assert add.file == "tests/test_calc.py" and add.line == TEST_CALC.splitlines().index("def test_add():") + 1
    assert "assert -1 == 5" in add.message
    assert "ZeroDivisionError: division by zero" in tests["tests/test_calc.py::TestDiv::test_zero"].message


def test_junit_reports_a_collection_error_against_the_module(runs: Runs) -> None:
    (case,) = parse_junit(runs.missing.junit)
    assert (case.id, case.status, case.file) == ("tests/test_missing.py", "error", "tests/test_missing.py")
    assert "No module named 'numpyxyz'" in case.message


def test_junit_that_is_not_xml_gives_no_cases() -> None:
    assert parse_junit(b"<testsuite><testcase") == []


# -- classify ----------------------------------------------------------------------------------


def test_failing_assertions_are_fail_and_a_clean_run_is_pass(runs: Runs) -> None:
    assert classify(_exec(runs.base), timeout=60, limits=LIMITS) == ("fail", "")
    ok = ExecResult(exit_code=0, output="5 passed", duration_s=1)
    assert classify(ok, timeout=60, limits=LIMITS) == ("pass", "")


def test_a_missing_dependency_is_an_environment_error(runs: Runs) -> None:
    status, reason = classify(_exec(runs.missing), timeout=60, limits=LIMITS)
    assert status == "error"
    assert reason == "missing Python module 'numpyxyz'; install the project's dependencies in a setup command"


@pytest.mark.parametrize(
    ("output", "module"),
    [
        ("/usr/bin/python3: No module named pytest\n", "pytest"),
        ("/work/.venv/bin/python3.12: No module named mypy.__main__; 'mypy' is a package\n", None),
        ("/usr/bin/python3: Error while finding module specification for 'pytest.x' "
         "(ModuleNotFoundError: No module named 'pytest')\n", "pytest"),
        ("/work/venv/bin/python3.12: No module named ruff\n", "ruff"),
    ],
)  # fmt: skip
def test_python_dash_m_without_the_module_is_an_environment_error(output: str, module: str | None) -> None:
    status, reason = classify(ExecResult(exit_code=1, output=output, duration_s=0.1), timeout=60, limits=LIMITS)
    if module is None:
        assert status == "fail", "a module that exists but cannot be run is the project's problem"
    else:
        assert (status, reason) == (
            "error",
            f"missing Python module {module!r}; install the project's dependencies in a setup command",
        )


def test_a_broken_import_of_the_projects_own_module_is_the_codes_fault(runs: Runs) -> None:
    local = local_module_names(["calc.py", "tests/", "src/pkg/", "README.md"])
    assert local == {"calc", "tests", "pkg"}
    assert classify(_exec(runs.local_import), timeout=60, limits=LIMITS, local_modules=local)[0] == "fail"
    missing_local = ExecResult(exit_code=1, output="ModuleNotFoundError: No module named 'pkg.sub'", duration_s=1)
    assert classify(missing_local, timeout=60, limits=LIMITS, local_modules=local)[0] == "fail"


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_command_not_found_is_an_environment_error(shell: str) -> None:
    real = subprocess.run([shell, "-c", "no-such-tool-xyz --check"], capture_output=True, text=True, check=False)
    result = ExecResult(exit_code=real.returncode, output=real.stderr, duration_s=0.1)
    status, reason = classify(result, timeout=60, limits=LIMITS)
    assert (status, reason) == (
        "error",
        "command not found: no-such-tool-xyz; install it in the sandbox image or add a setup command",
    )


def test_limits_and_timeouts_are_named() -> None:
    timed = ExecResult(exit_code=None, output="", duration_s=5, timed_out=True)
    assert classify(timed, timeout=5, limits=LIMITS) == (
        "timeout",
        "did not finish within 5 s; its whole process tree was killed",
    )
    oom = ExecResult(exit_code=137, output="", duration_s=1, killed="killed by the out-of-memory killer")
    assert classify(oom, timeout=5, limits=LIMITS) == ("killed", "killed by the out-of-memory killer")
    eagain = "BlockingIOError: [Errno 11] Resource temporarily unavailable"
    forks = ExecResult(
        exit_code=1, output=f'  File "fork.py", line 3, in <module>\n    if os.fork() == 0:\n{eagain}', duration_s=1
    )
    assert classify(forks, timeout=5, limits=LIMITS) == ("killed", "hit the sandbox's process limit (512 processes)")
    socket_eagain = ExecResult(
        exit_code=1, output=f'  File "net.py", line 9, in read\n    sock.recv(10)\n{eagain}', duration_s=1
    )
    assert classify(socket_eagain, timeout=5, limits=LIMITS) == ("fail", "")
    memory = ExecResult(exit_code=1, output="Traceback (most recent call last):\nMemoryError\n", duration_s=1)
    assert classify(memory, timeout=5, limits=LIMITS) == ("killed", "hit the sandbox's memory limit (2048 MiB)")


def test_no_tests_collected_is_an_error() -> None:
    real = ExecResult(exit_code=5, output="\nno tests ran in 0.01s\n", duration_s=1)
    assert classify(real, timeout=5, limits=LIMITS)[0] == "error"


def test_environment_error_ignores_ordinary_failures(runs: Runs) -> None:
    assert environment_error(runs.base.output) == ""
    assert environment_error("Error: Cannot find module 'left-pad'").startswith("missing Node module 'left-pad'")
    assert environment_error("Error: Cannot find module './local'") == ""


# -- signatures --------------------------------------------------------------------------------


def _signature(run: PytestRun) -> str:
    tests = parse_junit(run.junit, workdir=str(run.root))
    return failure_signature("fail", tests, run.output, workdir=str(run.root))


def test_the_same_failure_has_the_same_signature_despite_volatile_output(runs: Runs) -> None:
    assert runs.base.output != runs.again.output  # addresses, times and durations differ
    assert _signature(runs.base) == _signature(runs.again)
    assert _signature(runs.base) == _signature(runs.shifted), "moving code by a few lines is not progress"


def test_progress_changes_the_signature(runs: Runs) -> None:
    assert _signature(runs.base) != _signature(runs.fixed)
    text = signature_text("fail", parse_junit(runs.fixed.junit), runs.fixed.output)
    assert "tests/test_calc.py::test_add" not in text and "tests/test_calc.py::TestDiv::test_zero" in text


def test_signature_without_tests_uses_error_type_and_frame() -> None:
    out = 'Traceback (most recent call last):\n  File "/workspace/app.py", line 3, in main\n    boom()\nValueError: bad value at 0x7f00aa\n'
    text = signature_text("fail", [], out, workdir="/workspace")
    assert text == "status: fail\nerror: ValueError\nframe: app.py in main"
    lint = "app.py:3:1: F401 `os` imported but unused\nFound 1 error.\n"
    moved = "app.py:9:1: F401 `os` imported but unused\nFound 1 error.\n"
    assert failure_signature("fail", [], lint) == failure_signature("fail", [], moved)


def test_normalize_removes_addresses_times_and_temp_paths() -> None:
    raw = "obj at 0x7fdd5bd1ca50 at 2026-11-30T09:30:37.27+00:00 in /tmp/pytest-of-root/pytest-3/x/f.py took 0.73s pid 4242"
    assert normalize(raw) == "obj at 0x? at <time> in <tmp> took <duration> pid ?"


# -- summaries ---------------------------------------------------------------------------------


def test_summary_shows_failed_tests_assertions_and_key_frames(runs: Runs) -> None:
    tests = parse_junit(runs.base.junit, workdir=str(runs.base.root))
    summary = summarize("fail", "", runs.base.output, tests, workdir=str(runs.base.root), changed_files=["calc.py"])
    assert "FAILED tests/test_calc.py::test_add\n  assert -1 == 5" in summary
    assert "first frame in the project: tests/test_calc.py:" in summary
    assert "frame in a changed file: calc.py:6" in summary
    assert "test_ok" not in summary and "TestDiv::test_div" not in summary
    unchanged = summarize("fail", "", runs.base.output, tests, workdir=str(runs.base.root))
    assert "changed file" not in unchanged


def test_summary_redacts_secrets_and_folds_repeats(runs: Runs) -> None:
    tests = parse_junit(runs.base.junit, workdir=str(runs.base.root))
    summary = summarize("fail", "", runs.base.output, tests, secrets=[SECRET])
    assert SECRET in runs.base.output
    assert SECRET not in summary and "[REDACTED]" in summary
    assert summary.count("same line") < 5 and "repeated" in summary


def test_summary_of_an_environment_error_leads_with_the_reason(runs: Runs) -> None:
    tests = parse_junit(runs.missing.junit)
    summary = summarize("error", "missing Python module 'numpyxyz'", runs.missing.output, tests)
    assert summary.startswith("error: missing Python module 'numpyxyz'\nFAILED tests/test_missing.py")


def test_summary_without_junit_uses_the_traceback_or_the_tail() -> None:
    out = (
        'Traceback (most recent call last):\n  File "/workspace/app.py", line 3, in main\n    boom()\nValueError: bad\n'
    )
    summary = summarize("fail", "", out, [], workdir="/workspace", changed_files=["app.py"])
    assert summary == "fail\nValueError: bad\nfirst frame in the project: app.py:3 in main"
    tail = summarize("fail", "", "\n".join(f"line {i}" for i in range(100)), [])
    assert tail.splitlines()[-1] == "line 99" and "line 10\n" not in tail
    assert summarize("pass", "", "ok", []) == ""


def test_fold_repeats() -> None:
    assert (
        fold_repeats("a\na\na\nb\nb\nc")
        == "a\n[previous line repeated 2 more times]\nb\n[previous line repeated 1 more times]\nc"
    )


def test_frames_from_python_pytest_and_node() -> None:
    text = (
        '  File "/workspace/pkg/mod.py", line 12, in run\n'
        "tests/test_mod.py:7: in test_run\n"
        "    at add (/workspace/src/calc.js:3:11)\n"
        '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads\n'
    )
    found = frames(text, "/workspace")
    assert [(f.path, f.line, f.func) for f in found] == [
        ("pkg/mod.py", 12, "run"),
        ("tests/test_mod.py", 7, "test_run"),
        ("src/calc.js", 3, "add"),
        ("/usr/lib/python3.11/json/__init__.py", 346, "loads"),
    ]


def test_a_runner_crash_and_an_installed_package_without_the_name_are_environment_errors(tmp_path: Path) -> None:
    """Real pytest output: a plugin hook that raises takes the runner down (INTERNALERROR), and a test module
    importing a name an installed package lacks fails at collection; neither is the project's code."""
    import subprocess
    import sys

    crash, missing = tmp_path / "crash", tmp_path / "missing"
    (crash / "tests").mkdir(parents=True)
    (crash / "conftest.py").write_text(
        "def pytest_collection_modifyitems(items):\n    raise RuntimeError('plugin broke')\n"
    )
    (crash / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (missing / "tests").mkdir(parents=True)
    (missing / "tests" / "test_b.py").write_text("from json import loads_fast\n\n\ndef test_b():\n    pass\n")
    outputs = {}
    for name, folder in (("crash", crash), ("missing", missing)):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=folder, capture_output=True, text=True, check=False,
            env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        outputs[name] = done.stdout + done.stderr
    assert "INTERNALERROR>" in outputs["crash"]
    assert environment_error(outputs["crash"]).startswith("the test runner itself crashed (RuntimeError: plugin broke)")
    assert environment_error(outputs["missing"]).startswith(
        "an installed package lacks what the tests import (ImportError: cannot import name 'loads_fast' from 'json'"
    )
    assert environment_error(outputs["missing"], local_modules={"json"}) == "", "the project's own module: its code"
