"""The fake GitHub's merge-gate API, as a mixin: check runs (create, update, get, list, their
annotations) and dismissing a review, in the request and response shapes of GitHub's REST
reference.

It exists so the bot's merge gate (``bot.pr.checks``) is tested against the same rules GitHub
applies, not against what the bot happens to send. Modelled (src:
https://docs.github.com/rest/checks/runs, the OpenAPI ``check-run`` schema):

- ``POST /repos/{o}/{r}/check-runs``: ``name`` and ``head_sha`` required; ``status`` one of
  ``queued``, ``in_progress``, ``completed``; ``conclusion`` one of ``action_required``,
  ``cancelled``, ``failure``, ``neutral``, ``success``, ``skipped``, ``timed_out``, required
  when the status is ``completed`` (giving a conclusion completes the run); ``output`` needs
  ``title`` and ``summary`` (each at most 65,535 characters, like ``text``) and carries at most
  50 ``annotations`` per request, each with ``path``, ``start_line``, ``end_line``,
  ``annotation_level`` (``notice``, ``warning``, ``failure``) and ``message``. → 201 CheckRun.
- ``PATCH /repos/{o}/{r}/check-runs/{id}``: the same fields but ``head_sha``; annotations of
  every update are *appended* (that is how more than 50 are posted). → 200 CheckRun.
- ``GET .../check-runs/{id}`` → CheckRun; ``GET .../check-runs/{id}/annotations`` (paginated);
  ``GET .../commits/{ref}/check-runs`` (``check_name`` filters) → ``{"total_count",
  "check_runs"}``.
- Errors: unknown head SHA → 422 (ValidationError); other bad fields → 422 with the
  "Invalid request" message GitHub's schema validation gives (the exact wording is
  **unconfirmed**); a check run of another App → 404 (an App only sees its own for writing).

``PUT /repos/{o}/{r}/pulls/{n}/reviews/{id}/dismissals`` (src:
https://docs.github.com/rest/pulls/reviews#dismiss-a-review-for-a-pull-request): ``message``
required, ``event`` optional (``DISMISS``); → 200 Review with ``state: DISMISSED``; 404 for an
unknown review; 422 for a pending one and, as on GitHub, for one that is only a comment or is
already dismissed (only approvals and change requests can be dismissed).

CheckRun fields returned: ``id``, ``node_id``, ``head_sha``, ``external_id``, ``url``,
``html_url``, ``details_url``, ``status``, ``conclusion``, ``started_at``, ``completed_at``,
``output`` (``title``, ``summary``, ``text``, ``annotations_count``, ``annotations_url``),
``name``, ``check_suite`` (``id``), ``app``, ``pull_requests``.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .state import DOCS, ApiError, _node_id, _not_found, _validation_failed

STATUSES = ("queued", "in_progress", "completed")
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "timed_out")
LEVELS = ("notice", "warning", "failure")
MAX_ANNOTATIONS = 50
MAX_TEXT = 65535
_DOCS = f"{DOCS}/checks/runs"

_REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
CHECK_ROUTES = [
    ("POST", _REPO + r"/check-runs", "create_check_run"),
    ("PATCH", _REPO + r"/check-runs/(?P<check_run_id>\d+)", "update_check_run"),
    ("GET", _REPO + r"/check-runs/(?P<check_run_id>\d+)", "get_check_run"),
    ("GET", _REPO + r"/check-runs/(?P<check_run_id>\d+)/annotations", "list_annotations"),
    ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/check-runs", "list_check_runs"),
    ("PUT", _REPO + r"/pulls/(?P<number>\d+)/reviews/(?P<review_id>\d+)/dismissals",
     "dismiss_review"),
]


@dataclass
class _CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    started_at: str | None
    completed_at: str | None
    details_url: str | None
    external_id: str | None
    output: dict[str, Any] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    updates: int = 0  # PATCHes received


def _invalid(message: str) -> ApiError:
    return ApiError(422, {"message": f"Invalid request.\n\n{message}",
                          "documentation_url": _DOCS, "status": "422"})


class ChecksApi:
    """Check runs for ``FakeGitHub``: put it before ``RestApi`` in the bases; it answers the
    check-run paths and hands every other path on."""

    # ------------------------------------------------------------------ state

    @property
    def _check_runs(self) -> dict[int, _CheckRun]:
        if "_checks" not in self.__dict__:
            self.__dict__["_checks"] = {}
            self.__dict__["_check_ids"] = itertools.count(4_000_000_001)
        return self.__dict__["_checks"]

    def check_runs(self, repo: str, head_sha: str | None = None) -> list[dict[str, Any]]:
        """The check runs of ``repo`` (of one commit when ``head_sha`` is given), as JSON."""
        return [self._check_run_json(run) for run in self._check_runs.values()
                if run.repo.lower() == repo.lower()
                and (head_sha is None or run.head_sha == head_sha)]

    def check_annotations(self, check_run_id: int) -> list[dict[str, Any]]:
        return [dict(a) for a in self._check_runs[int(check_run_id)].annotations]

    def check_run_updates(self, check_run_id: int) -> int:
        return self._check_runs[int(check_run_id)].updates

    # ------------------------------------------------------------------ routing

    def _route(self, method: str, path: str):
        for verb, pattern, handler in CHECK_ROUTES:
            match = re.fullmatch(pattern, path)
            if match and verb == method:
                from .rest import _Route  # rest imports nothing from here: no cycle at load

                return (_Route(method, re.compile(pattern), handler, "token"),
                        {k: v for k, v in match.groupdict().items() if v is not None})
        return super()._route(method, path)

    # ------------------------------------------------------------------ JSON

    def _check_run_json(self, run: _CheckRun) -> dict[str, Any]:
        api = f"{self._api()}/repos/{run.repo}"
        output = {"title": run.output.get("title"), "summary": run.output.get("summary"),
                  "text": run.output.get("text"), "annotations_count": len(run.annotations),
                  "annotations_url": f"{api}/check-runs/{run.id}/annotations"}
        repo = self._repo(run.repo)
        mini = {"id": repo.id, "url": api, "name": repo.name}
        prs = [{"url": f"{api}/pulls/{pr.number}", "id": pr.number, "number": pr.number,
                "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": mini},
                "base": {"ref": pr.base_ref, "sha": pr.base_sha, "repo": mini}}
               for pr in repo.prs.values() if pr.head_sha == run.head_sha and pr.state == "open"]
        return {
            "id": run.id, "node_id": _node_id("CR_", run.id), "head_sha": run.head_sha,
            "external_id": run.external_id or "", "url": f"{api}/check-runs/{run.id}",
            "html_url": f"https://github.com/{run.repo}/runs/{run.id}",
            "details_url": run.details_url, "status": run.status, "conclusion": run.conclusion,
            "started_at": run.started_at, "completed_at": run.completed_at, "output": output,
            "name": run.name, "check_suite": {"id": 5_000_000_000 + len(run.head_sha)},
            "app": self.app_json(),
            "pull_requests": prs,
        }

    # ------------------------------------------------------------------ validation

    def _apply(self, run: _CheckRun, body: dict[str, Any]) -> None:
        """Validate ``body`` fully, then change ``run``: a refused request changes nothing."""
        status = body.get("status", run.status)
        if status not in STATUSES:
            raise _invalid(f"For 'properties/status', {json.dumps(status)} is not a member of "
                           "enum.")
        conclusion = body.get("conclusion", run.conclusion)
        if conclusion is not None and conclusion not in CONCLUSIONS:
            raise _invalid(f"For 'properties/conclusion', {json.dumps(conclusion)} is not a "
                           "member of enum.")
        if "conclusion" in body and body["conclusion"] is not None:
            status = "completed"  # a conclusion completes the run
        if status == "completed" and conclusion is None:
            raise _invalid("'conclusion' wasn't supplied.")
        output = body.get("output")
        annotations: list[dict[str, Any]] = []
        if output is not None:
            if not isinstance(output, dict):
                raise _invalid("For 'properties/output', it is not an object.")
            for key in ("title", "summary"):
                if not isinstance(output.get(key), str):
                    raise _invalid(f"'{key}' wasn't supplied.")
            for key in ("title", "summary", "text"):
                if isinstance(output.get(key), str) and len(output[key]) > MAX_TEXT:
                    raise _invalid(f"For 'properties/{key}', it is too long (maximum is "
                                   f"{MAX_TEXT} characters).")
            annotations = output.get("annotations") or []
            if len(annotations) > MAX_ANNOTATIONS:
                raise _invalid(f"For 'properties/annotations', it has more than "
                               f"{MAX_ANNOTATIONS} items.")
            for note in annotations:
                _check_annotation(note)
        run.status, run.conclusion = status, conclusion
        if status == "in_progress" and run.started_at is None:
            run.started_at = self._iso()
        if status == "completed":
            run.completed_at = body.get("completed_at") or self._iso()
        else:
            run.completed_at = None
        for key in ("details_url", "external_id"):
            if key in body:
                setattr(run, key, body[key])
        if output is not None:
            run.output = {k: output.get(k) for k in ("title", "summary", "text")}
            run.annotations.extend(dict(a) for a in annotations)

    # ------------------------------------------------------------------ handlers

    async def _h_create_check_run(self, call) -> web.Response:
        body = call.body if isinstance(call.body, dict) else {}
        if not isinstance(body.get("name"), str) or not body["name"]:
            raise _invalid("'name' wasn't supplied.")
        head = body.get("head_sha")
        if not isinstance(head, str) or head not in call.repo.commits:
            raise _validation_failed("CheckRun", "head_sha", "invalid",
                                     "head_sha must be a commit of the repository")
        runs = self._check_runs
        run = _CheckRun(next(self.__dict__["_check_ids"]), call.repo.full_name, body["name"],
                        head, "queued", None, body.get("started_at"), None,
                        body.get("details_url"), body.get("external_id"))
        self._apply(run, {"status": "queued", **body})
        runs[run.id] = run
        return self._json(self._check_run_json(run), 201)

    def _find_check_run(self, call) -> _CheckRun:
        run = self._check_runs.get(int(call.params["check_run_id"]))
        if run is None or run.repo.lower() != call.repo.full_name.lower():
            raise _not_found()
        return run

    async def _h_update_check_run(self, call) -> web.Response:
        run = self._find_check_run(call)
        body = call.body if isinstance(call.body, dict) else {}
        if "head_sha" in body:
            raise _invalid("'head_sha' is not a permitted key.")
        self._apply(run, body)
        run.updates += 1
        return self._json(self._check_run_json(run))

    async def _h_get_check_run(self, call) -> web.Response:
        return self._json(self._check_run_json(self._find_check_run(call)))

    async def _h_list_annotations(self, call) -> web.Response:
        run = self._find_check_run(call)
        return self._paginate(call, [{**a, "blob_href": f"https://github.com/{run.repo}/blob/"
                                      f"{run.head_sha}/{a['path']}"} for a in run.annotations])

    async def _h_list_check_runs(self, call) -> web.Response:
        sha = self._resolve_ref(call.repo, call.params["ref"])
        name = call.request.query.get("check_name")
        runs = [self._check_run_json(r) for r in self._check_runs.values()
                if r.repo.lower() == call.repo.full_name.lower() and r.head_sha == sha
                and (name is None or r.name == name)]
        return self._json({"total_count": len(runs), "check_runs": runs})


    async def _h_dismiss_review(self, call) -> web.Response:
        review = next((r for r in call.pr.reviews if r.id == int(call.params["review_id"])), None)
        if review is None:
            raise _not_found()
        body = call.body if isinstance(call.body, dict) else {}
        if not isinstance(body.get("message"), str) or not body["message"]:
            raise _validation_failed("PullRequestReview", "message", "missing_field")
        if body.get("event", "DISMISS") != "DISMISS":
            raise _invalid(f"For 'properties/event', {json.dumps(body['event'])} is not a "
                           "member of enum.")
        if review.state == "PENDING":
            raise ApiError(422, {"message": "Can not dismiss a pending review",
                                 "documentation_url": f"{DOCS}/pulls/reviews", "status": "422"})
        if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            # only an approval or a change request can be dismissed (wording unconfirmed)
            kind = "commented" if review.state == "COMMENTED" else "dismissed"
            raise ApiError(422, {"message": "Unprocessable Entity",
                                 "errors": [f"Can not dismiss a {kind} pull request review"],
                                 "documentation_url": f"{DOCS}/pulls/reviews", "status": "422"})
        review.state = "DISMISSED"
        return self._json(self._review_json(call.repo, call.pr, review))


def _check_annotation(note: Any) -> None:
    if not isinstance(note, dict):
        raise _invalid("For 'items', it is not an object.")
    for key in ("path", "message"):
        if not isinstance(note.get(key), str) or not note[key]:
            raise _invalid(f"'{key}' wasn't supplied.")
    for key in ("start_line", "end_line"):
        if not isinstance(note.get(key), int) or isinstance(note.get(key), bool):
            raise _invalid(f"'{key}' wasn't supplied.")
    if note.get("annotation_level") not in LEVELS:
        raise _invalid(f"For 'properties/annotation_level', "
                       f"{json.dumps(note.get('annotation_level'))} is not a member of enum.")
    if note["end_line"] < note["start_line"]:
        raise _invalid("'end_line' must be greater than or equal to 'start_line'.")
