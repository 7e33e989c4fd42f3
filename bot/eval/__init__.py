"""`ai-fix eval`: tasks with hidden tests run through the same code path as `ai-fix run`, then classified.

`tasks` reads the rows (SWE-bench's format, or releases on PyPI), `pypi` builds a task from two source
releases, `repos` prepares each run's repository, `hidden` applies the hidden tests to the result and
runs them, `classify` turns an outcome and the hidden tests into a class and the figures per model,
`report` writes report.json, report.md and the chart, `policies` are the `oracle` and `noop`
calibration models, `runner` runs it all (in parallel, resumable) with `progress` on the terminal.
"""
