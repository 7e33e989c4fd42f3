"""Where a job's trace is kept, and how the run viewer finds it from the job's persisted state."""

from pathlib import Path

from bot.job.paths import job_trace, trace_file


def test_the_trace_sits_beside_the_job_directory_even_when_the_repository_name_has_a_dot() -> None:
    # A suffix swap would turn both into `.../o--my.trace.jsonl`: every job of the repository in one file.
    assert trace_file("/w/jobs/o--my.repo-1-5-1") == Path("/w/jobs/o--my.repo-1-5-1.trace.jsonl")
    assert trace_file("/w/jobs/o--my.repo-2-6-1") != trace_file("/w/jobs/o--my.repo-1-5-1")


def test_the_viewer_reads_the_trace_path_from_the_delivery_state() -> None:
    assert job_trace({"delivery": {"job_dir": "/w/jobs/o--r-1-5-1"}}) == Path("/w/jobs/o--r-1-5-1.trace.jsonl")
    for state in ({}, {"delivery": None}, {"delivery": {"job_dir": ""}}, {"delivery": {"job_dir": 5}}):
        assert job_trace(state) is None
