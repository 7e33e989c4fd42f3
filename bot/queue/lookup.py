"""Reading jobs back whole: their row, the triggers attached to them and their history."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.queue.database import Database, marks
from bot.queue.models import Job, JobEvent, Trigger


class JobLookup:
    """Jobs as `Job` models, read outside any transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, job_id: int) -> Job | None:
        jobs = self._jobs("WHERE id = ?", (job_id,), 1)
        return jobs[0] if jobs else None

    def newest(self, status: str | None = None, limit: int = 50, repo: str | None = None) -> list[Job]:
        """The newest jobs first, of one status and one repository ("owner/name") when given."""
        filters = [(column, value) for column, value in (("status", status), ("repo", repo)) if value]
        where = " AND ".join(f"{column} = ?" for column, _ in filters)
        return self._jobs(f"WHERE {where}" if where else "", [value for _, value in filters], limit)

    def _jobs(self, where: str, params: Sequence[object], limit: int) -> list[Job]:
        with self.db.reading() as conn:
            rows = conn.execute(f"SELECT * FROM jobs {where} ORDER BY id DESC LIMIT ?", (*params, limit)).fetchall()
            ids = [r["id"] for r in rows]
            triggers: dict[int, list[Trigger]] = {i: [] for i in ids}
            events: dict[int, list[JobEvent]] = {i: [] for i in ids}
            if ids:
                for r in conn.execute(
                    f"SELECT job_id, data FROM triggers WHERE job_id IN ({marks(ids)}) ORDER BY id", ids
                ):
                    triggers[r[0]].append(Trigger.model_validate_json(r[1]))
                for r in conn.execute(
                    f"SELECT job_id, at, event, data FROM events WHERE job_id IN ({marks(ids)}) ORDER BY id", ids
                ):
                    events[r[0]].append(JobEvent(at=r[1], event=r[2], data=json.loads(r[3])))
        return [Job.from_row(r, triggers[r["id"]], events[r["id"]]) for r in rows]
