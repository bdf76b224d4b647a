"""A round written in a few set-based statements stores exactly what one decision at a time did."""

import pytest

from bench.perf.ledger import make_files
from bench.tasks.diffs import git_diff
from bot.store.ledger_sqlite import Ledger, LedgerError, now
from tracker.anchors import fingerprint
from tracker.decide import RoundInput, decide_round
from tracker.lifecycle import InvalidTransition, State, check_transition
from tracker.models import DecidedBy, Decision, Finding

FILES = 20


def seeded(path, size: int) -> tuple[Ledger, int, dict[str, str]]:
    """A ledger whose PR has ``size`` defects raised at round 1 and a completed round 1."""
    ledger = Ledger(path)
    pr = ledger.pull_request("o/r", 1)["id"]
    files = make_files(size, 0)
    ledger.begin_round(pr, "h1")
    with ledger.transaction():
        for n in range(size):
            f, i = n % FILES, (n // FILES) * 3
            p = f"pkg/mod_{f}.py"
            ledger.add_defect(pr, Finding(f"problem {n}", p, i + 1, i + 1), 1,
                              code=files[p].splitlines()[i])
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    return ledger, pr, files


def realistic_round(ledger: Ledger, pr: int, files: dict[str, str]) -> list[Decision]:
    """Round 2 as the tracker decides it after a push, then people revising some of it."""
    new = make_files(len(ledger.defects(pr)), 3)
    rnd = RoundInput.from_diff(2, git_diff(files, new), new)
    decisions = decide_round(ledger.defects(pr), rnd)
    assert {d.state for d in decisions} == {State.OPEN, State.RESOLVED}
    resolved = next(d.key for d in decisions if d.state is State.RESOLVED)
    return decisions + [
        Decision(resolved, State.OPEN, "reviewer-disputes", "not fixed",
                 decided_by=DecidedBy.HUMAN, signals=["reviewer_disputes by ann"]),
        Decision("d2", State.RESOLVED, "thread_resolved", "ann resolved the thread",
                 decided_by=DecidedBy.HUMAN, code="other()"),
    ]


def one_at_a_time(ledger: Ledger, pr: int, number: int, decision: Decision, head: str) -> None:
    """The ledger's former per-decision write (read, check, update, insert), as the oracle."""
    defect = ledger.defect(pr, decision.key)
    last = ledger.db.execute(
        "select state, round from state_history where defect_id = ? and round < ? "
        "order by round desc, id desc limit 1", [defect.id, number]).fetchone()
    if number == defect.raised_round:
        assert decision.state in (State.NEW, State.RESOLVED)
    else:
        previous = State(last[0]) if last[1] == number - 1 else (
            State.RESOLVED if last[0] == "Resolved" else State.OPEN)
        check_transition(previous, decision.state, defect.key)
    update = {"state": decision.state.value, "state_round": number, "updated_at": now()}
    if decision.path is not None and decision.line_start is not None:
        update.update(path=decision.path, line_start=decision.line_start,
                      line_end=decision.line_end)
    update["anchor_sha"] = head
    if decision.code is not None:
        update.update(code=decision.code, fingerprint=fingerprint(decision.code))
    if decision.state is State.RESOLVED and defect.state is not State.RESOLVED:
        update["resolved_code"] = defect.code
    ledger.db["defects"].update(defect.id, update)
    evidence = decision.evidence + (" | signals: " + "; ".join(decision.signals)
                                    if decision.signals else "")
    ledger.db["state_history"].insert(
        {"defect_id": defect.id, "round": number, "state": str(decision.state),
         "rule": decision.rule, "evidence": evidence, "decided_by": str(decision.decided_by),
         "at": now()})


def stored(ledger: Ledger) -> tuple[list[tuple], list[tuple]]:
    """Every defect and history row, without the time stamps."""
    defects = ledger.db.execute("select * from defects order by id")
    names = [c[0] for c in defects.description]
    keep = [i for i, n in enumerate(names) if n not in ("created_at", "updated_at")]
    history = ledger.db.execute(
        "select id, defect_id, round, state, rule, evidence, decided_by from state_history "
        "order by id").fetchall()
    return [tuple(row[i] for i in keep) for row in defects.fetchall()], history


def test_a_batched_round_stores_what_one_decision_at_a_time_stored(tmp_path):
    batched, pr, files = seeded(tmp_path / "a.db", 60)
    oracle, pr2, _ = seeded(tmp_path / "b.db", 60)
    decisions = realistic_round(batched, pr, files)
    with batched, oracle:
        batched.record_round(pr, 2, decisions, [(Finding("new", "x.py", 3), "y = 2")],
                             head_sha="h2")
        with oracle.transaction():
            for decision in decisions:
                one_at_a_time(oracle, pr2, 2, decision, "h2")
            oracle.add_defect(pr2, Finding("new", "x.py", 3), 2, code="y = 2", anchor_sha="h2")
        assert stored(batched) == stored(oracle)
        assert batched.defect(pr, "D2").resolved_code is not None


def traced_round(tmp_path, size: int) -> list[str]:
    ledger, pr, files = seeded(tmp_path / f"t{size}.db", size)
    with ledger:
        decisions = decide_round(ledger.defects(pr), RoundInput.from_diff(
            2, git_diff(files, make_files(size, 1)), make_files(size, 1)))
        statements: list[str] = []
        ledger.db.conn.set_trace_callback(statements.append)
        ledger.record_round(pr, 2, decisions)
        ledger.db.conn.set_trace_callback(None)
        assert len(decisions) == size and len(ledger.history(pr, "D1")) == 2
    return statements


def test_a_round_takes_a_bounded_number_of_statements(tmp_path):
    """Each decision costs one execution of the batched update and one of the batched insert;
    everything else is a fixed handful of statements, however many defects the round has."""
    counts = {}
    for size in (10, 200):
        statements = traced_round(tmp_path, size)
        assert not any("sqlite_master" in s for s in statements)
        updates = [s for s in statements if s.startswith("update defects set state = ")]
        inserts = [s for s in statements if s.startswith("insert into state_history")]
        assert len(updates) == len(inserts) == size
        counts[size] = len(statements) - 2 * size
    assert counts[10] == counts[200] <= 4


def test_a_bad_decision_anywhere_in_the_batch_writes_nothing(ledger):
    pr = ledger.pull_request("o/r", 1)["id"]
    ledger.begin_round(pr, "h1")
    for line in (3, 6, 9):
        ledger.add_defect(pr, Finding("bug", "a.py", line), 1)
    ledger.finish_round(pr, 1)
    ledger.begin_round(pr, "h2")
    good = Decision("D1", State.OPEN, "untouched", "same")
    before = stored(ledger)
    with pytest.raises(LedgerError, match="no defect D9"):
        ledger.record_round(pr, 2, [good, Decision("D9", State.OPEN, "x", "y")])
    with pytest.raises(InvalidTransition):
        ledger.record_round(pr, 2, [good, good, Decision("D3", State.REOPENED, "x", "y")])
    assert stored(ledger) == before
