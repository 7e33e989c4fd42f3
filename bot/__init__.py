"""ai-fix: a self-hostable GitHub App that turns labelled issues into verified pull requests."""

__version__ = "0.1.0"
