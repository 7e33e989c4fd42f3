"""What the shared fake GitHub lacks for contract tests: contents reads from a dict of files."""

from __future__ import annotations

import base64
import hashlib

import httpx

from tests.support.fake_github import Call, FakeGitHub


def _entry(fake: FakeGitHub, repo: str, path: str, kind: str, size: int) -> dict[str, object]:
    api = f"{fake.base_url}repos/{repo}/contents/{path}"
    html = f"https://github.com/{repo}/blob/main/{path}"
    return {
        "type": kind, "size": size, "name": path.rsplit("/", 1)[-1], "path": path,
        "sha": hashlib.sha1(path.encode()).hexdigest(), "url": api, "git_url": api, "html_url": html,
        "download_url": None, "_links": {"git": api, "html": html, "self": api},
    }  # fmt: skip


def serve_files(fake: FakeGitHub, repo: str, files: dict[str, str], *, branch: str = "main") -> list[str]:
    """Answer the contents API from `files` at `branch`; returns the list of refs asked for."""
    refs: list[str] = []

    def handler(call: Call) -> httpx.Response:
        refs.append(call.query.get("ref", ""))
        if call.query.get("ref") != branch or f"{call.params['owner']}/{call.params['repo']}" != repo:
            return httpx.Response(404, json={"message": "No commit found for the ref"})
        path = call.params["path"].strip("/")
        if path in files:
            body = _entry(fake, repo, path, "file", len(files[path].encode()))
            body.update(encoding="base64", content=base64.b64encode(files[path].encode()).decode())
            return httpx.Response(200, json=body)
        prefix = f"{path}/" if path else ""
        children = {p[len(prefix) :].split("/", 1)[0] for p in files if p.startswith(prefix)}
        if not children:
            return httpx.Response(404, json={"message": "Not Found"})
        listing = []
        for name in sorted(children):
            full = prefix + name
            is_file = full in files
            listing.append(_entry(fake, repo, full, "file" if is_file else "dir", len(files[full]) if is_file else 0))
        return httpx.Response(200, json=listing)

    fake.on("repos/get-content", handler)
    return refs
