"""The check runner: the project's own checks, run for real, classified and summarised."""
