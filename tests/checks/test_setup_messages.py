"""What a failed setup says: the failing command's real error line, whole, and the `.github/ai-fix.yml` line to fix it."""

from __future__ import annotations

from bot.checks.setup import config_line, error_line, shortened

SCM_FAILURE = """\
Obtaining file:///workspace
  Installing build dependencies: started
  Getting requirements to build editable: finished with status 'error'
  error: subprocess-exited-with-error

  × Getting requirements to build editable did not run successfully.
  │ exit code: 1
  ╰─> [28 lines of output]
      LookupError: setuptools-scm was unable to detect version for /workspace.

      Alternatively, set the version in the environment with SETUPTOOLS_SCM_PRETEND_VERSION_FOR_PLUGGY or VCS_VERSIONING_PRETEND_VERSION_FOR_PLUGGY, as described in https://setuptools-scm.readthedocs.io/en/latest/config/
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error

× Getting requirements to build editable did not run successfully.
│ exit code: 1
╰─> See above for output.

note: This error originates from a subprocess, and is likely not a problem with pip.

[notice] A new release of pip is available: 23.2.1 -> 26.3
[notice] To update, run: pip install --upgrade pip
"""
"""pip 23.2's output for pluggy 1.6.0 (setuptools-scm) installed without its git metadata."""

RESOLVER = """\
ERROR: Cannot install pytest==4.6.10 and pytest==4.6.11 because these package versions have conflicting dependencies.

The conflict is caused by:
    pytest 4.6.11 depends on atomicwrites>=1.0
    pytest 4.6.10 depends on atomicwrites>=1.0

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip to attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/
"""
"""pip 26.3's output for pastel 0.2.1's Poetry dev-dependencies (`pytest = "^4.6.4"`) on Python 3.11."""


def test_the_error_line_is_the_exception_not_pip_s_notice_nor_a_cut_word() -> None:
    assert error_line(SCM_FAILURE) == "LookupError: setuptools-scm was unable to detect version for /workspace."
    assert error_line(RESOLVER).startswith("ERROR: Cannot install pytest==4.6.10 and pytest==4.6.11 because")
    assert error_line("[notice] To update, run: pip install --upgrade pip\n") == "no output"
    long = "ValueError: " + "word " * 100
    assert error_line(long).endswith("word …") and len(error_line(long)) <= 302


def test_a_guessed_setup_s_fix_is_the_config_line_starting_from_what_failed() -> None:
    command = (
        ".ai-fix-env/venv/bin/python -m pip install -e '.[testing]' coverage > .ai-fix-env/install.log 2>&1 || "
        "{ .ai-fix-env/venv/bin/python -m pip install pytest && echo fallback; }"
    )
    assert shortened(command) == ".ai-fix-env/venv/bin/python -m pip install -e '.[testing]' coverage"
    assert config_line(command) == "setup: [\"python -m pip install -e '.[testing]' coverage\"]"


def test_npm_s_error_is_its_message_not_its_code_or_log_path() -> None:
    output = (
        "npm error code ENOVERSIONS\nnpm error No versions available for tape\n"
        "npm error A complete log of this run can be found in: /tmp/home/.npm/_logs/2026-12-05T12_02_05_868Z-debug-0.log\n"
    )
    assert error_line(output) == "npm error No versions available for tape"
