"""A fake GitHub REST API at the HTTP level, checking every request against GitHub's OpenAPI description.

`FakeGitHub.handle(httpx.Request) -> httpx.Response` is the whole fake. Use it in-process through respx
(`with fake.mock(): ...`, loopback traffic passes through) or, for a bot in another process, served on
loopback (`fake.asgi()` under uvicorn). Every request is checked: the JWT on `/app/...` calls, the
installation token and its repository scope on `/repos/...` calls, path and query parameters and the JSON
body against `tests/fixtures/openapi/ops/*.deref.json`. A request that breaks a rule is answered 422 and
kept in `violations`; the `fake_github` fixture fails the test when any remain.

Answers are built from the spec's own response examples (and checked against its response schemas), or
for the three reads not in the subset, from the webhook fixtures' issue and pull request objects. Labels are
kept per repository (`issues/create-label` answers 422 `already_exists` as GitHub does); the App's installations
and the repositories an installation token reaches are listed from `installations`. The manifest flow (the
`settings/apps/new` form and the code's conversion) is `tests/support/fake_manifest.py`.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import jwt
import respx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OPS_DIR = FIXTURES / "openapi" / "ops"
WEBHOOKS_DIR = FIXTURES / "webhooks"
BASE_URL = "https://api.github.test/"

Handler = Callable[["Call"], httpx.Response]
_APP_IDS = itertools.count(4242)
"""githubkit caches an App's JWT process-wide by App id: each fake is a new App, so no test is
answered with a JWT signed for an earlier one."""


def github_time(offset: float = 0.0) -> str:
    """Now (plus `offset` seconds) as GitHub writes timestamps: `2019-05-15T15:20:18Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))


def load_payload(name: str) -> dict[str, Any]:
    """A webhook fixture, e.g. `issues/labeled`."""
    return json.loads((WEBHOOKS_DIR / f"{name}.json").read_text())


def _nullable(schema: Any) -> Any:
    """OpenAPI 3.0 `nullable: true` as JSON Schema type unions."""
    if isinstance(schema, list):
        return [_nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _nullable(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable"):
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass
class Operation:
    op_id: str
    method: str
    path: str
    parameters: list[dict[str, Any]]
    body_schema: dict[str, Any] | None
    body_required: bool
    responses: dict[str, dict[str, Any]]
    """status -> {"schema": ..., "example": ...}"""

    @property
    def regex(self) -> re.Pattern[str]:
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        if self.op_id == "repos/get-content":
            pattern = pattern.replace("(?P<path>[^/]+)", "(?P<path>.*)")
        return re.compile(f"^{pattern}$")


def load_operations() -> dict[str, Operation]:
    ops: dict[str, Operation] = {}
    for file in sorted(OPS_DIR.glob("*.deref.json")):
        raw = json.loads(file.read_text())
        op = raw["operation"]
        body = (op.get("requestBody") or {}).get("content", {}).get("application/json", {})
        responses: dict[str, dict[str, Any]] = {}
        for status, resp in op.get("responses", {}).items():
            content = (resp.get("content") or {}).get("application/json", {})
            examples = content.get("examples") or {}
            example = next(iter(examples.values()), {}).get("value") if examples else content.get("example")
            responses[status] = {"schema": _nullable(content.get("schema")), "example": example}
        ops[op["operationId"]] = Operation(
            op_id=op["operationId"],
            method=raw["method"].upper(),
            path=raw["path"],
            parameters=[_nullable(p) for p in op.get("parameters", [])],
            body_schema=_nullable(body.get("schema")) if body else None,
            body_required=bool((op.get("requestBody") or {}).get("required")),
            responses=responses,
        )
    # Reads the worker makes that the subset does not describe: checked for path and paging parameters only.
    page_params = [
        {"name": "per_page", "in": "query", "schema": {"type": "integer", "maximum": 100}},
        {"name": "page", "in": "query", "schema": {"type": "integer"}},
    ]
    for op_id, path, number, extra in (
        ("issues/get", "/repos/{owner}/{repo}/issues/{issue_number}", "issue_number", []),
        ("issues/list-comments", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "issue_number", page_params),
        ("pulls/get", "/repos/{owner}/{repo}/pulls/{pull_number}", "pull_number", []),
    ):
        if op_id in ops:  # described by the copied operations after all
            continue
        params = [
            {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": number, "in": "path", "required": True, "schema": {"type": "integer"}},
            *extra,
        ]
        ops[op_id] = Operation(op_id, "GET", path, params, None, False, {})
    return ops


@functools.cache
def _app_key() -> rsa.RSAPrivateKey:
    """One App key per test session: generating RSA keys is slow."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Call:
    """One request as the fake saw it."""

    op_id: str
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    json: Any
    token: str | None
    """The installation token used (None on JWT calls)."""


@dataclass
class Token:
    installation_id: int
    repos: list[str]
    expires: float


@dataclass
class FakeGitHub:
    """GitHub's REST API for one App, with in-memory issues, pulls, comments, permissions and reactions."""

    app_id: int = field(default_factory=lambda: next(_APP_IDS))
    base_url: str = BASE_URL
    served_at: str = ""
    """Where the fake is served on loopback for a bot in another process ("" in-process, through respx)."""
    installations: dict[int, list[str]] = field(default_factory=dict)
    """installation id -> "owner/name" repositories it may reach."""
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)
    """(repo, login) -> admin | maintain | write | triage | read; missing users are 404."""
    issues: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    review_comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    reactions: list[tuple[str, str, str]] = field(default_factory=list)
    """(repo, "issue:N" | "comment:ID", content)."""
    created_comments: list[tuple[str, int, str]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    tokens: dict[str, Token] = field(default_factory=dict)
    edited_comments: list[tuple[int, str]] = field(default_factory=list)
    """(comment id, new body) of every edit made."""
    bot_login: str = "ai-fix[bot]"
    """The login GitHub gives the App's bot account."""
    keeps_comments: bool = False
    """Whether comments the App posts show up in later listings, as on GitHub (off: the listing stays as set up)."""
    labels: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """repo -> the labels created in it (`issues/create-label`); a name taken already is answered 422 as GitHub does."""

    def __post_init__(self) -> None:
        key = _app_key()
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        self._public_key = key.public_key()
        self.operations = load_operations()
        self._scripted: list[tuple[str, str, list[httpx.Response]]] = []
        self._handlers: dict[str, Handler] = {
            "apps/create-installation-access-token": self._create_token,
            "apps/get-authenticated": self._get_app,
            "repos/get-collaborator-permission-level": self._permission,
            "reactions/create-for-issue": self._reaction,
            "reactions/create-for-issue-comment": self._reaction,
            "issues/create-comment": self._create_comment,
            "issues/update-comment": self._update_comment,
            "issues/get": self._get_issue,
            "issues/list-comments": self._list_comments,
            "pulls/get": self._get_pull,
            "pulls/list-review-comments": self._list_review_comments,
            "issues/create-label": self._create_label,
            "apps/list-installations": self._list_installations,
            "apps/list-repos-accessible-to-installation": self._installation_repos,
        }
        self._lock = threading.Lock()
        self._ids = iter(range(9_000_000, 10_000_000))

    # -- set-up helpers ---------------------------------------------------------------------------

    def add_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str = "Spelling error in the README file",
        body: str = "It looks like you accidently spelled 'commit' with two 't's.",
        author: str = "Codertocat",
        labels: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        issue = copy.deepcopy(load_payload("issues/labeled")["issue"])
        issue.update(number=number, title=title, body=body, labels=[{"name": name} for name in labels])
        issue["user"]["login"] = author
        self.issues[(repo, number)] = issue
        self.comments.setdefault((repo, number), [])
        return issue

    def add_comment(self, repo: str, number: int, author: str, body: str) -> dict[str, Any]:
        comment = copy.deepcopy(load_payload("issue_comment/created")["comment"])
        comment.update(id=next(self._ids), body=body, created_at=github_time(), updated_at=github_time())
        comment["user"]["login"] = author
        self.comments.setdefault((repo, number), []).append(comment)
        return comment

    def app_object(self, app_id: int | None = None) -> dict[str, Any]:
        """The App as GitHub describes it in `performed_via_github_app` (this App unless `app_id` says otherwise)."""
        app = copy.deepcopy(self.operations["checks/create"].responses["201"]["example"]["app"])
        app.update(
            id=self.app_id if app_id is None else app_id,
            slug="ai-fix",
            name="ai-fix",
            html_url="https://github.com/apps/ai-fix",
        )
        return app

    def add_bot_comment(self, repo: str, number: int, body: str, *, app_id: int | None = None) -> dict[str, Any]:
        """A comment written by an App's bot account: this App's unless `app_id` names another."""
        comment = self.add_comment(repo, number, self.bot_login, body)
        comment["user"]["type"] = "Bot"
        comment["performed_via_github_app"] = self.app_object(app_id)
        return comment

    def add_pull(
        self, repo: str, number: int, body: str, *, author: str = "ai-fix[bot]", head_repo: str = "", head_ref: str = ""
    ) -> dict[str, Any]:
        """A pull request as the REST API answers `pulls/get` (GitHub's own example, so its schema holds).

        `author` ending `[bot]` is an App's bot account, any other a person; `head_repo` (default: `repo`) is
        where its head branch lives, another owner's for a fork; `head_ref` that branch's name."""
        pull = self._example("pulls/get", "200")
        pull["head"]["ref"] = head_ref or pull["head"]["ref"]
        # GitHub's example team lacks the `type` its own schema requires: no team is requested here.
        pull.update(number=number, body=body, requested_teams=[])
        pull["user"].update(login=author, type="Bot" if author.endswith("[bot]") else "User")
        self.place_pull(pull, repo, head_repo or repo)
        self.pulls[(repo, number)] = pull
        return pull

    @staticmethod
    def place_pull(pull: dict[str, Any], repo: str, head_repo: str) -> None:
        """Set where a pull request's base and head live (the REST objects' `repo`, `label` and owners)."""
        for side, name in (("base", repo), ("head", head_repo)):
            owner, short = name.split("/", 1)
            pull[side]["repo"].update(full_name=name, name=short)
            pull[side]["repo"]["owner"]["login"] = owner
            pull[side]["user"]["login"] = owner
            pull[side]["label"] = f"{owner}:{pull[side]['ref']}"

    def add_review_comment(self, repo: str, number: int, review_id: int, author: str, body: str) -> dict[str, Any]:
        comment = copy.deepcopy(load_payload("pull_request_review_comment/created")["comment"])
        comment.update(id=next(self._ids), pull_request_review_id=review_id, body=body)
        comment["user"]["login"] = author
        self.review_comments.setdefault((repo, number), []).append(comment)
        return comment

    def script(self, method: str, path_regex: str, *responses: httpx.Response) -> None:
        """Answer the next matching requests with `responses` (in order) before the normal behaviour."""
        self._scripted.append((method.upper(), path_regex, list(responses)))

    def pending_scripts(self) -> int:
        """Scripted answers not yet used."""
        return sum(len(responses) for _, _, responses in self._scripted)

    def on(self, op_id: str, handler: Handler) -> None:
        """Give an operation a behaviour (or replace one); the request is still checked first."""
        self._handlers[op_id] = handler

    def calls_to(self, op_id: str) -> list[Call]:
        return [c for c in self.calls if c.op_id == op_id]

    # -- transports -------------------------------------------------------------------------------

    @contextmanager
    def mock(self) -> Iterator[respx.MockRouter]:
        """Route this process's httpx traffic for the fake's host here; loopback passes through."""
        host = httpx.URL(self.base_url).host
        with respx.mock(assert_all_called=False) as router:
            router.route(host=host).mock(side_effect=self.handle)
            router.route(host="127.0.0.1").pass_through()
            yield router

    def asgi(self) -> Callable[..., Any]:
        """The fake as an ASGI app, for a bot running in another process (AIFIX_GITHUB_API_URL)."""

        async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
            if scope["type"] != "http":
                return
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            # The base URL's host, the request's own path (a base URL's path, GHES's /api/v3, is in it already).
            url = httpx.URL(self.base_url).copy_with(path=scope["path"], query=scope.get("query_string", b""))
            headers = [(k.decode(), v.decode()) for k, v in scope["headers"]]
            response = self.handle(httpx.Request(scope["method"], url, headers=headers, content=body))
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k.encode(), v.encode()) for k, v in response.headers.items()],
                }
            )
            await send({"type": "http.response.body", "body": response.content})

        return app

    # -- dispatch ---------------------------------------------------------------------------------

    def _violation(self, message: str) -> httpx.Response:
        self.violations.append(message)
        return httpx.Response(422, json={"message": f"fake GitHub: {message}"})

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            return self._handle(request)

    def _authorize(
        self, op: Operation, path: str, params: dict[str, str], auth: str
    ) -> tuple[httpx.Response | None, str | None]:
        """(GitHub's refusal of the request's credentials, or None; the installation token it carried)."""
        token: str | None = None
        if path == "/app" or path.startswith("/app/"):
            if problem := self._check_jwt(auth):
                # GitHub's answer to a JWT it cannot verify (signed with another key, expired): 401.
                self.violations.append(f"{op.op_id}: {problem}")
                return httpx.Response(401, json={"message": "A JSON web token could not be decoded"}), None
        elif path.startswith("/app-manifests/"):
            # The manifest flow's code is the credential: GitHub takes no Authorization, and a client sending
            # one (a token of another App) would be leaking it.
            if auth:
                return self._violation(f"{op.op_id}: sent an Authorization header; the code needs none"), None
        elif path.startswith("/installation/"):
            token = auth.split(" ", 1)[1] if " " in auth else ""
            if problem := self._check_token(token, ""):
                self.violations.append(f"{op.op_id}: {problem}")
                return httpx.Response(401, json={"message": "Bad credentials"}), token
        else:
            token = auth.split(" ", 1)[1] if " " in auth else ""
            if problem := self._check_token(token, f"{params.get('owner')}/{params.get('repo')}"):
                self.violations.append(f"{op.op_id}: {problem}")
                return httpx.Response(401, json={"message": "Bad credentials"}), token
        return None, token

    def _handle(self, request: httpx.Request) -> httpx.Response:
        base_path = httpx.URL(self.base_url).path.rstrip("/")
        path = request.url.path[len(base_path) :] if request.url.path.startswith(base_path) else request.url.path
        for method, regex, responses in self._scripted:
            if method == request.method and re.search(regex, path) and responses:
                return responses.pop(0)
        op, params = self._match(request.method, path)
        if op is None:
            return self._violation(f"{request.method} {path} is not an operation the fake knows")
        query = dict(request.url.params)
        try:
            data = json.loads(request.content) if request.content else None
        except ValueError:
            return self._violation(f"{op.op_id}: body is not JSON")
        problem = self._check_request(op, params, query, data)
        if problem:
            return self._violation(f"{op.op_id}: {problem}")
        refused, token = self._authorize(op, path, params, request.headers.get("authorization", ""))
        if refused is not None:
            return refused
        call = Call(op.op_id, request.method, path, params, query, data, token)
        self.calls.append(call)
        handler = self._handlers.get(op.op_id)
        if handler is None:
            return self._violation(f"{op.op_id}: the fake has no behaviour for it yet (register one with on())")
        response = handler(call)
        self._check_response(op, response)
        return response

    def _match(self, method: str, path: str) -> tuple[Operation | None, dict[str, str]]:
        for op in self.operations.values():
            if op.method == method and (m := op.regex.match(path)):
                return op, m.groupdict()
        return None, {}

    def _check_request(self, op: Operation, params: dict[str, str], query: dict[str, str], data: Any) -> str:
        for param in op.parameters:
            where = params if param["in"] == "path" else query if param["in"] == "query" else None
            if where is None:
                continue
            if param["name"] not in where:
                if param.get("required"):
                    return f"{param['in']} parameter {param['name']} is missing"
                continue
            raw: Any = where[param["name"]]
            schema = param.get("schema") or {}
            if schema.get("type") == "integer":
                if not re.fullmatch(r"-?\d+", raw):
                    return f"{param['name']}={raw!r} is not an integer"
                raw = int(raw)
            try:
                jsonschema.validate(raw, schema)
            except jsonschema.ValidationError as exc:
                return f"{param['name']}: {exc.message}"
        known = {p["name"] for p in op.parameters if p["in"] == "query"}
        if unknown := set(query) - known:
            return f"unknown query parameters {sorted(unknown)}"
        if op.body_schema is None:
            return "" if data is None else "this operation takes no body"
        if data is None:
            return "a JSON body is required" if op.body_required else ""
        try:
            # A validator without jsonschema.validate's meta-check of the (fixed) spec schema: 100x faster.
            jsonschema.Draft202012Validator(op.body_schema).validate(data)
        except jsonschema.ValidationError as exc:
            return f"body: {exc.message} at {list(exc.absolute_path)}"
        return ""

    def _check_response(self, op: Operation, response: httpx.Response) -> None:
        spec = op.responses.get(str(response.status_code))
        if spec and spec["schema"] is not None:
            try:
                jsonschema.Draft202012Validator(spec["schema"]).validate(response.json())
            except jsonschema.ValidationError as exc:  # the fake itself answered off-spec: a bug in the test helper
                self.violations.append(f"fake answer to {op.op_id} breaks the schema: {exc.message}")

    def _check_jwt(self, auth: str) -> str:
        if not auth.startswith("Bearer "):
            return "App calls need Authorization: Bearer <JWT>"
        try:
            claims = jwt.decode(auth[7:], self._public_key, algorithms=["RS256"], options={"verify_iat": False})
        except jwt.PyJWTError as exc:
            return f"JWT refused: {exc}"
        if str(claims.get("iss")) != str(self.app_id):
            return f"JWT iss {claims.get('iss')!r} is not the App id {self.app_id}"
        if claims["exp"] - claims["iat"] > 11 * 60:
            return "JWT lives longer than GitHub's 10 minutes"
        return ""

    def _check_token(self, token: str, repo: str) -> str:
        """Why `token` may not be used on `repo` ("": it may); `repo` "" for installation-wide reads."""
        known = self.tokens.get(token)
        if known is None:
            return "unknown installation token"
        if known.expires < time.time():
            return "installation token expired"
        if repo and repo.lower() not in [r.lower() for r in known.repos]:
            return f"token scoped to {known.repos} used on {repo}"
        return ""

    # -- operations -------------------------------------------------------------------------------

    def _example(self, op_id: str, status: str) -> dict[str, Any]:
        return copy.deepcopy(self.operations[op_id].responses[status]["example"])

    def _get_app(self, call: Call) -> httpx.Response:
        body = self._example(call.op_id, "200")
        body.update(id=self.app_id, slug=self.bot_login.removesuffix("[bot]"), name="ai-fix")
        return httpx.Response(200, json=body)

    def _create_token(self, call: Call) -> httpx.Response:
        installation = int(call.params["installation_id"])
        if installation not in self.installations:
            return httpx.Response(404, json={"message": "Not Found"})
        owner_repos = self.installations[installation]
        wanted = (call.json or {}).get("repositories")
        if not wanted and (call.json or {}).get("permissions") == {"metadata": "read"}:
            wanted = [r.split("/", 1)[1] for r in owner_repos]  # read-only, to list what the installation reaches
        elif not wanted:
            self.violations.append("installation token requested without a repository scope")
            return httpx.Response(
                422, json={"message": "ai-fix must scope tokens to one repository, or to metadata: read"}
            )
        repos = [r for r in owner_repos if r.split("/", 1)[1] in wanted]
        if len(repos) != len(wanted):
            return httpx.Response(
                422, json={"message": "There is at least one repository that does not exist or is not accessible"}
            )
        token = "ghs_" + secrets.token_hex(18)
        self.tokens[token] = Token(installation, repos, time.time() + 3600)
        body = self._example(call.op_id, "201")
        body.update(token=token, expires_at=github_time(3600))
        return httpx.Response(201, json=body)

    def _permission(self, call: Call) -> httpx.Response:
        repo = f"{call.params['owner']}/{call.params['repo']}"
        role = self.permissions.get((repo, call.params["username"]))
        if role is None:
            return httpx.Response(
                404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        body = self._example(call.op_id, "200")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        body.update(permission=legacy, role_name=role)
        # GitHub's own example omits user.role_name, which its schema requires (and real answers carry).
        body["user"].update(login=call.params["username"], role_name=role)
        return httpx.Response(200, json=body)

    def _reaction(self, call: Call) -> httpx.Response:
        repo = f"{call.params['owner']}/{call.params['repo']}"
        target = (
            f"issue:{call.params['issue_number']}"
            if "issue_number" in call.params
            else f"comment:{call.params['comment_id']}"
        )
        entry = (repo, target, call.json["content"])
        existed = entry in self.reactions
        if not existed:
            self.reactions.append(entry)
        body = self._example(call.op_id, "201")
        body["content"] = call.json["content"]
        return httpx.Response(200 if existed else 201, json=body)

    def _create_comment(self, call: Call) -> httpx.Response:
        repo = f"{call.params['owner']}/{call.params['repo']}"
        number = int(call.params["issue_number"])
        self.created_comments.append((repo, number, call.json["body"]))
        comment = self._example(call.op_id, "201")
        comment.update(id=next(self._ids), body=call.json["body"], performed_via_github_app=self.app_object())
        comment["user"].update(login=self.bot_login, type="Bot")
        if self.keeps_comments:
            self.comments.setdefault((repo, number), []).append(copy.deepcopy(comment))
        return httpx.Response(201, json=comment)

    def _update_comment(self, call: Call) -> httpx.Response:
        comment_id = int(call.params["comment_id"])
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == comment_id:
                    comment["body"] = call.json["body"]
                    self.edited_comments.append((comment_id, call.json["body"]))
                    return httpx.Response(200, json=copy.deepcopy(comment))
        return httpx.Response(404, json={"message": "Not Found"})

    def _get_issue(self, call: Call) -> httpx.Response:
        issue = self.issues.get((f"{call.params['owner']}/{call.params['repo']}", int(call.params["issue_number"])))
        return httpx.Response(200, json=issue) if issue else httpx.Response(404, json={"message": "Not Found"})

    def _page(self, items: list[dict[str, Any]], call: Call) -> httpx.Response:
        per_page, page = int(call.query.get("per_page", 30)), int(call.query.get("page", 1))
        return httpx.Response(200, json=items[(page - 1) * per_page : page * per_page])

    def _list_comments(self, call: Call) -> httpx.Response:
        return self._page(
            self.comments.get((f"{call.params['owner']}/{call.params['repo']}", int(call.params["issue_number"])), []),
            call,
        )

    def _get_pull(self, call: Call) -> httpx.Response:
        pull = self.pulls.get((f"{call.params['owner']}/{call.params['repo']}", int(call.params["pull_number"])))
        return httpx.Response(200, json=pull) if pull else httpx.Response(404, json={"message": "Not Found"})

    def _create_label(self, call: Call) -> httpx.Response:
        repo = f"{call.params['owner']}/{call.params['repo']}"
        made = self.labels.setdefault(repo, [])
        if any(label["name"].casefold() == call.json["name"].casefold() for label in made):
            return httpx.Response(
                422,
                json={
                    "message": "Validation Failed",
                    "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}],
                    "documentation_url": "https://docs.github.com/rest/issues/labels#create-a-label",
                },
            )
        label = self._example(call.op_id, "201")
        label.update(id=next(self._ids), default=False, **call.json)
        made.append(label)
        return httpx.Response(201, json=label)

    def _list_installations(self, call: Call) -> httpx.Response:
        template = self._example(call.op_id, "200")[0]
        found = []
        for installation_id, repos in sorted(self.installations.items()):
            item = copy.deepcopy(template)
            item.update(id=installation_id, app_id=self.app_id, repository_selection="selected")
            login = repos[0].split("/", 1)[0] if repos else "octocat"
            # The spec's `account` is allOf(Simple User, Enterprise), which GitHub's own example (a user) fails:
            # the Enterprise fields it requires are added so the answer holds to the schema as written.
            item["account"].update(
                login=login, name=login, slug=login, created_at=github_time(), updated_at=github_time()
            )
            found.append(item)
        return self._page(found, call)

    def _installation_repos(self, call: Call) -> httpx.Response:
        template = self._example(call.op_id, "200")["repositories"][0]
        repos = []
        for name in self.tokens[call.token or ""].repos:
            repo = copy.deepcopy(template)
            repo.update(full_name=name, name=name.split("/", 1)[1])
            repo["owner"]["login"] = name.split("/", 1)[0]
            repos.append(repo)
        per_page, page = int(call.query.get("per_page", 30)), int(call.query.get("page", 1))
        shown = repos[(page - 1) * per_page : page * per_page]
        return httpx.Response(200, json={"total_count": len(repos), "repositories": shown})

    def _list_review_comments(self, call: Call) -> httpx.Response:
        key = (f"{call.params['owner']}/{call.params['repo']}", int(call.params["pull_number"]))
        return self._page(self.review_comments.get(key, []), call)
