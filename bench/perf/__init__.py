"""Speed and load benchmarks (scripts, not tests): how fast, and how much, the real parts go.

Each module is one ``python -m bench.perf.<name>`` script that times a real path against a
reference measured in the same run (a bare handler, raw SQL, a durable commit, a stateless
prompt) and prints the figures; none of them scores review quality, which is the pipeline's
(``bench.run``). They sit apart from the pipeline so its folder shows its flow: they may import
the pipeline's helpers (``bench.replay.payloads``, ``bench.replay.github``,
``bench.score.metrics``...), never the other way round (``tests/test_layers.py``).

- ``ack``: webhook acknowledgement of a burst, the real app against a bare HMAC handler;
- ``loop_lag``: the server's worst event-loop lag through a first round, a files-API page
  and a 64 KB mention flood;
- ``load_webhooks``: acknowledgement latency of one burst of signed deliveries;
- ``ledger`` (with ``bigdiff``, its 20,000-line pushes): one round's decide and ledger write
  against a raw-SQL reference;
- ``queue`` (with ``queue_fill``, the backlog, and ``queue_drain``, the burst drain): job claim
  latency by backlog size;
- ``replay``: the bench's own replay overhead per round with an instant scripted model;
- ``prompt_tokens``: prompt tokens per round of the LLM path against a stateless prompt;
- ``dashboard_pages``: the dashboard's three pages on a big ledger against a bare query
  returning the rows each shows.

Adding one: a module here with a ``main(argv)``, its name in ``__all__`` below, and a line in the
benchmarks' list in ``docs/reference.md``.
"""

__all__ = ["ack", "bigdiff", "dashboard_pages", "ledger", "load_webhooks", "loop_lag",
           "prompt_tokens", "queue", "queue_drain", "queue_fill", "replay"]
