"""The shared fake GitHub plus what PR delivery writes: pulls, check runs, labels, thread replies, GraphQL.

Every REST request is still checked by `FakeGitHub` against the OpenAPI operations; GraphQL is not in
the REST description, so its requests are checked here (token, mutation, a known node id).
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx

from tests.support.fake_github import Call, FakeGitHub

READY = "markPullRequestReadyForReview"
TO_DRAFT = "convertPullRequestToDraft"


class PullsGitHub(FakeGitHub):
    """FakeGitHub that also keeps pull requests, check runs, labels and replies in memory."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.keeps_comments = True
        self.check_runs: list[dict[str, Any]] = []
        self.labels: dict[tuple[str, int], list[str]] = {}
        self.graphql_calls: list[dict[str, Any]] = []
        self.git_dirs: dict[str, Path] = {}
        """repo -> a git directory on disk: the contents API reads from it (and the bot pushes to it)."""
        for op_id, handler in {
            "pulls/list": self._list_pulls,
            "pulls/create": self._create_pull,
            "pulls/update": self._update_pull,
            "pulls/request-reviewers": self._request_reviewers,
            "checks/create": self._create_check,
            "checks/update": self._update_check,
            "checks/list-for-ref": self._list_checks,
            "issues/add-labels": self._add_labels,
            "issues/remove-label": self._remove_label,
            "pulls/create-reply-for-review-comment": self._reply,
            "repos/get-content": self._content,
        }.items():
            self.on(op_id, handler)

    def add_review_comment(self, repo: str, number: int, review_id: int, author: str, body: str) -> dict[str, Any]:
        comment = super().add_review_comment(repo, number, review_id, author, body)
        comment.update(
            side="RIGHT", start_side="RIGHT"
        )  # the recorded delivery has `start_side: null`, which the fake refuses
        return comment

    # -- views for assertions ---------------------------------------------------------------------

    def pulls_of(self, repo: str) -> list[dict[str, Any]]:
        return [p for (r, _), p in sorted(self.pulls.items()) if r == repo]

    def bot_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.get((repo, number), []) if c["user"]["login"] == self.bot_login]

    def replies(self, repo: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.review_comments.get((repo, number), []) if c.get("in_reply_to_id")]

    # -- GraphQL ----------------------------------------------------------------------------------

    def _handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.rstrip("/").endswith("/graphql"):
            return self._graphql(request)
        return super()._handle(request)

    def _graphql(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        if token not in self.tokens:
            return self._violation("graphql: unknown installation token")
        try:
            data = json.loads(request.content)
        except ValueError:
            return self._violation("graphql: body is not JSON")
        query, variables = data.get("query", ""), data.get("variables") or {}
        mutation = READY if READY in query else TO_DRAFT if TO_DRAFT in query else None
        if mutation is None or not isinstance(variables.get("id"), str):
            return self._violation(
                f"graphql: expected a {READY} or {TO_DRAFT} mutation with an id variable, got {query[:80]!r}"
            )
        pull = next((p for p in self.pulls.values() if p["node_id"] == variables["id"]), None)
        if pull is None:
            return httpx.Response(
                200, json={"data": None, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a node"}]}
            )
        self.graphql_calls.append({"mutation": mutation, "number": pull["number"]})
        self.calls.append(Call(f"graphql/{mutation}", "POST", "/graphql", {}, {}, data, token))
        pull["draft"] = mutation == TO_DRAFT
        return httpx.Response(200, json={"data": {mutation: {"pullRequest": {"isDraft": pull["draft"]}}}})

    # -- pulls ------------------------------------------------------------------------------------

    def _repo(self, call: Call) -> str:
        return f"{call.params['owner']}/{call.params['repo']}"

    def _list_pulls(self, call: Call) -> httpx.Response:
        repo, state, head = self._repo(call), call.query.get("state", "open"), call.query.get("head")
        found = [
            p
            for p in self.pulls_of(repo)
            if (state == "all" or p["state"] == state) and (head is None or p["head"]["label"] == head)
        ]
        return self._page(found, call)

    def _create_pull(self, call: Call) -> httpx.Response:
        repo, body = self._repo(call), call.json
        owner = repo.split("/")[0]
        label = body["head"] if ":" in body["head"] else f"{owner}:{body['head']}"
        if any(p["head"]["label"] == label and p["state"] == "open" for p in self.pulls_of(repo)):
            return httpx.Response(
                422,
                json={
                    "message": "Validation Failed",
                    "documentation_url": "https://docs.github.com/rest",
                    "errors": [
                        {
                            "resource": "PullRequest",
                            "code": "custom",
                            "message": f"A pull request already exists for {owner}:{body['head']}.",
                        }
                    ],
                },
            )
        pull = self.new_pull(
            repo, body["head"], body["base"], body.get("title"), body.get("body"), bool(body.get("draft"))
        )
        return httpx.Response(201, json=pull)

    def new_pull(
        self, repo: str, head: str, base: str, title: str | None, body: str | None, draft: bool
    ) -> dict[str, Any]:
        """An open pull request by the App's bot, as `pulls/create` makes it (its number after every issue and PR)."""
        number = max([n for (r, n) in self.pulls if r == repo] + [n for (r, n) in self.issues if r == repo] + [0]) + 1
        pull = self._example("pulls/create", "201")
        pull.update(
            number=number,
            node_id=f"PR_node{number}",
            title=title,
            body=body,
            draft=draft,
            state="open",
            html_url=f"https://github.com/{repo}/pull/{number}",
            requested_reviewers=[],
            requested_teams=[],
        )
        pull["head"]["ref"], pull["base"]["ref"] = head, base
        self.place_pull(pull, repo, repo)
        pull["user"].update(login=self.bot_login, type="Bot")
        self.pulls[(repo, number)] = pull
        return pull

    def _update_pull(self, call: Call) -> httpx.Response:
        pull = self.pulls.get((self._repo(call), int(call.params["pull_number"])))
        if pull is None:
            return httpx.Response(404, json={"message": "Not Found"})
        pull.update({k: v for k, v in call.json.items() if k in ("title", "body", "state")})
        return httpx.Response(200, json=pull)

    def _request_reviewers(self, call: Call) -> httpx.Response:
        pull = self.pulls.get((self._repo(call), int(call.params["pull_number"])))
        if pull is None:
            return httpx.Response(404, json={"message": "Not Found"})
        for login in call.json.get("reviewers", []):
            if (self._repo(call), login) not in self.permissions:
                return httpx.Response(422, json={"message": "Reviews may only be requested from collaborators."})
            if login not in [u["login"] for u in pull["requested_reviewers"]]:
                pull["requested_reviewers"].append({**copy.deepcopy(pull["user"]), "login": login, "type": "User"})
        return httpx.Response(201, json=pull)

    # -- check runs -------------------------------------------------------------------------------

    def _create_check(self, call: Call) -> httpx.Response:
        run = self._example("checks/create", "201")
        run.update(
            id=next(self._ids),
            name=call.json["name"],
            head_sha=call.json["head_sha"],
            status=call.json.get("status", "queued"),
            conclusion=call.json.get("conclusion"),
            details_url=call.json.get("details_url"),
        )
        run["output"] = {
            **run["output"],
            **{k: v for k, v in (call.json.get("output") or {}).items() if k != "annotations"},
        }
        run["output"]["annotations_count"] = len((call.json.get("output") or {}).get("annotations", []))
        run["annotations"] = list((call.json.get("output") or {}).get("annotations", []))
        run["repo"] = self._repo(call)
        self.check_runs.append(run)
        return httpx.Response(201, json={k: v for k, v in run.items() if k not in ("annotations", "repo")})

    def _update_check(self, call: Call) -> httpx.Response:
        run = next((r for r in self.check_runs if r["id"] == int(call.params["check_run_id"])), None)
        if run is None:
            return httpx.Response(404, json={"message": "Not Found"})
        for key in ("status", "conclusion", "details_url"):
            if key in call.json:
                run[key] = call.json[key]
        output = call.json.get("output") or {}
        run["output"].update({k: v for k, v in output.items() if k != "annotations"})
        run["annotations"] += output.get("annotations", [])  # GitHub appends annotations on update
        run["output"]["annotations_count"] = len(run["annotations"])
        return httpx.Response(200, json={k: v for k, v in run.items() if k not in ("annotations", "repo")})

    def _list_checks(self, call: Call) -> httpx.Response:
        runs = [
            {k: v for k, v in r.items() if k not in ("annotations", "repo")}
            for r in self.check_runs
            if r["repo"] == self._repo(call)
            and r["head_sha"] == call.params["ref"]
            and ("check_name" not in call.query or r["name"] == call.query["check_name"])
        ]
        return httpx.Response(200, json={"total_count": len(runs), "check_runs": runs})

    # -- comments, labels, replies ----------------------------------------------------------------

    def _add_labels(self, call: Call) -> httpx.Response:
        key = (self._repo(call), int(call.params["issue_number"]))
        names = self.labels.setdefault(key, [])
        names += [n for n in call.json["labels"] if n not in names]
        label = self._example("issues/add-labels", "200")[0]
        return httpx.Response(200, json=[{**label, "name": n} for n in names])

    def _remove_label(self, call: Call) -> httpx.Response:
        names = self.labels.get((self._repo(call), int(call.params["issue_number"])), [])
        name = unquote(call.params["name"])
        if name not in names:
            return httpx.Response(404, json={"message": "Label does not exist"})
        names.remove(name)
        return httpx.Response(200, json=[])

    def _reply(self, call: Call) -> httpx.Response:
        key = (self._repo(call), int(call.params["pull_number"]))
        thread = next((c for c in self.review_comments.get(key, []) if c["id"] == int(call.params["comment_id"])), None)
        if thread is None or thread.get("in_reply_to_id"):
            return httpx.Response(404, json={"message": "Not Found"})  # replies to replies are not supported
        reply = self._example("pulls/create-reply-for-review-comment", "201")
        reply.update(id=next(self._ids), body=call.json["body"], in_reply_to_id=thread["id"], path=thread.get("path"))
        reply["user"].update(login=self.bot_login, type="Bot")
        self.review_comments[key].append(reply)
        return httpx.Response(201, json=reply)

    # -- contents, read from the repository on disk ------------------------------------------------

    def _git(self, repo: str, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", f"--git-dir={self.git_dirs[repo]}", *args], capture_output=True, check=False)

    def _content(self, call: Call) -> httpx.Response:
        repo = self._repo(call)
        if repo not in self.git_dirs:
            return httpx.Response(
                404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        path = unquote(call.params["path"]).strip("/")
        ref = call.query.get("ref", "HEAD")
        kind = self._git(repo, "cat-file", "-t", f"{ref}:{path}").stdout.decode().strip()
        if kind == "blob":
            data = self._git(repo, "cat-file", "blob", f"{ref}:{path}").stdout
            return httpx.Response(200, json=self._entry(repo, path, "file", data))
        if kind == "tree":
            listing = self._git(repo, "ls-tree", "-z", f"{ref}:{path}" if path else ref).stdout.decode()
            entries = []
            for line in filter(None, listing.split("\0")):
                meta, name = line.split("\t", 1)
                entries.append(
                    self._entry(repo, f"{path}/{name}".strip("/"), "dir" if meta.split()[1] == "tree" else "file", None)
                )
            return httpx.Response(200, json=entries)
        return httpx.Response(404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

    def _entry(self, repo: str, path: str, kind: str, data: bytes | None) -> dict[str, Any]:
        entry = self._example("repos/get-content", "200")
        entry.update(
            type=kind,
            name=path.rsplit("/", 1)[-1],
            path=path,
            size=len(data or b""),
            url=f"{self.base_url}repos/{repo}/contents/{path}",
        )
        if data is None:
            entry.pop("content", None)
            entry.pop("encoding", None)
        else:
            entry.update(content=base64.b64encode(data).decode(), encoding="base64")
        return entry
