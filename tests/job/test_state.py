"""Each job kind's typed state: where its trace is kept, and how the run viewer finds it from the stored state."""

from pathlib import Path

from bot.job.state import job_trace, trace_file


def test_the_trace_sits_beside_the_job_directory_even_when_the_repository_name_has_a_dot() -> None:
    # A suffix swap would turn both into `.../o--my.trace.jsonl`: every job of the repository in one file.
    assert trace_file("/w/jobs/o--my.repo-1-5-1") == Path("/w/jobs/o--my.repo-1-5-1.trace.jsonl")
    assert trace_file("/w/jobs/o--my.repo-2-6-1") != trace_file("/w/jobs/o--my.repo-1-5-1")


def test_the_viewer_reads_the_trace_path_from_each_job_kinds_state() -> None:
    assert job_trace("issue", {"delivery": {"job_dir": "/w/jobs/o--r-1-5-1"}}) == Path("/w/jobs/o--r-1-5-1.trace.jsonl")
    assert job_trace("rebase", {"job_dir": "/w/jobs/o--r-pr2-rebase-7"}) == Path(
        "/w/jobs/o--r-pr2-rebase-7.trace.jsonl"
    )
    for kind, state in (
        ("issue", {}),
        ("issue", {"delivery": None}),
        ("review", {"delivery": {"job_dir": ""}}),
        ("retry", {"delivery": {"job_dir": 5}}),
        ("scan", {"job_dir": "/w/jobs/x"}),
        ("stop", {"delivery": {"job_dir": "/w/jobs/x"}}),
    ):
        assert job_trace(kind, state) is None, (kind, state)
