"""The job side: the durable queue, its workers, and what each kind of job does.

``queue`` (``JobQueue`` and ``Workers``: webhook work stored in a queue store, worked by async
workers; re-exported here), ``handlers`` (what each kind of job does: rounds, people's comments,
thread actions, commands, closing), ``payloads`` (a comment job's payload as the tracker's values),
``slash_commands`` (``/roundwise`` commands in PR comments, parsed), ``forced`` (who may force
a re-review, and how often), ``live`` (the verdict rows and their gauges refreshed after every
job) and ``retention`` (old deliveries and finished jobs
dropped).

Only ``queue``'s names are re-exported: importing the queue must not import the handlers (and
through them the round and the forges).
"""

from .queue import Job, JobQueue, RetryLater, Workers

__all__ = ["Job", "JobQueue", "RetryLater", "Workers", "forced", "handlers", "live", "payloads",
           "queue", "retention", "slash_commands"]
