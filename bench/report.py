"""Reports of a scored bench run, and the comparison of two runs.

``write_reports(summary, out_dir)`` writes ``report.md`` and a self-contained ``report.html``
(the same tables plus two matplotlib plots embedded as base64 PNG: detection per round with
each round's due defects, and the state confusion heatmap), both rendered with jinja2 from
``bench/templates``. Both open with a run header (version, commit, date, reviewer, judge,
tolerance, tasks) and lead with the bot's own detection apart from the defects it carried
from people's reviews (``bench.score.provenance``); then the MCR-Bench protocol's combined tables
(each names what it shows; the paper's table number is a note), tracking beside the naive
baseline when the summary has one, AACR-Bench, and tokens and seconds per round.

``compare(a, b)`` prints the headline figures of two summaries side by side with B - A, for
``roundwise bench compare RUN_A RUN_B``; ``load_summary(run_dir)`` reads a run's summary.json.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from tracker.models import MCR_TYPES, SEVERITIES

from .score.metrics import STATE_ORDER

TEMPLATES = Path(__file__).parent / "templates"


class ReportError(ValueError):
    """A run directory or summary that cannot be reported on."""


# --- tables ----------------------------------------------------------------------------------


@dataclass
class Table:
    """One report table: a title, a note under it, column names and rows of cell strings."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""
    paper: str = ""  # where the MCR-Bench paper has the same table, e.g. "Table 5"

    def numeric(self) -> list[bool]:
        """Per column: whether every cell is a number or "-" (right-aligned), else text."""
        return [all(_is_number(row[i]) for row in self.rows) if self.rows else i > 0
                for i in range(len(self.columns))]

    def full_note(self) -> str:
        paper = f"MCR-Bench paper: {self.paper}." if self.paper else ""
        return " ".join(part for part in (self.note, paper) if part)


def _is_number(cell: str) -> bool:
    if cell == "-":
        return True
    try:
        float(cell.rstrip("%"))
    except ValueError:
        return False
    return True


def ratio(value) -> str:
    """A rate as three decimals ("-" when absent)."""
    return "-" if value is None else f"{float(value):.3f}"


def number(value, digits: int = 0) -> str:
    """A count or a measure with ``digits`` decimals ("-" when absent)."""
    if value is None:
        return "-"
    return f"{float(value):.{digits}f}" if digits else str(round(float(value)))


def _detection_row(label: str, d: dict) -> list[str]:
    return [label, ratio(d["precision"]), ratio(d["recall"]), ratio(d["f1"]),
            number(d["due"]), number(d["findings"]), number(d["tp"])]


DETECTION_COLUMNS = ["Precision", "Recall", "F1", "Due", "Findings", "Matched"]


def own_tables(s: dict) -> list[Table]:
    """The split first: own, carried and combined detection; then own by round, language and
    defect type (MCR tasks scored with ``bench.score.provenance``)."""
    own, carried = s.get("own"), s.get("carried")
    if not own or not carried:
        return []
    split = Table("Detection: own findings, carried defects, combined",
                  ["Part", "Rounds", *DETECTION_COLUMNS],
                  [["Own, round 1", *_detection_row("", own["round_1"])[1:]],
                   ["Own, all rounds", *_detection_row("", own)[1:]],
                   ["Carried, all rounds", *_detection_row("", carried)[1:]],
                   ["Combined (protocol)", *_detection_row("", s["detection"])[1:]]],
                  "Own: findings the bot raised itself. Carried: defects people raised in "
                  "earlier rounds, reported again with a state. Each is matched against every "
                  "defect due at the round, so own + carried = combined; precision is - when "
                  "a part has no findings.")
    for row, rounds in zip(split.rows, (own["round_1"], own, carried, s["detection"]),
                           strict=True):
        row.insert(1, number(rounds.get("rounds")))
    by_round = Table("Own detection by round", ["Round", *DETECTION_COLUMNS],
                     [_detection_row(r, d) for r, d in own["per_round"].items()],
                     "Round 1 is the only round where no one has told the bot anything yet.")
    by_lang = Table("Own detection by language", ["Language", *DETECTION_COLUMNS],
                    [_detection_row(lang, d) for lang, d in own["per_language"].items()])
    by_type = Table("Own hit rate by defect type", ["Type", "Name", "Hit rate", "Hits", "Due"],
                    [[t, MCR_TYPES.get(t, "-"), ratio(d["hit_rate"]), number(d["hit"]),
                      number(d["due"])] for t, d in own["per_type"].items()])
    return [split, by_round, by_lang, by_type]


def detection_tables(s: dict) -> list[Table]:
    """The protocol's combined tables (the paper's 5, 7, 8, 9, 10 and Figure 5) and tracking."""
    langs = s["per_language"]
    t5 = Table("Combined detection by language", ["Language", *DETECTION_COLUMNS],
               [_detection_row(lang, d) for lang, d in langs.items()]
               + [_detection_row("Overall", s["detection"])],
               "Own and carried findings matched one-to-one to due defect cards (micro over "
               "task-rounds).", "Table 5")
    t7 = Table("Lifecycle state accuracy by language",
               ["Language", "State accuracy", "Matched pairs"],
               [[lang, ratio(d["state_accuracy"]), number(d["state_n"])]
                for lang, d in langs.items()]
               + [["Overall", ratio(s["state_accuracy"]), number(s["state_n"])]],
               "Exact state equality on matched (finding, card) pairs.", "Table 7")
    t8 = Table("Combined hit rate by defect type", ["Type", "Name", "Hit rate", "Hits", "Due"],
               [[t, MCR_TYPES.get(t, "-"), ratio(d["hit_rate"]), number(d["hit"]),
                 number(d["due"])] for t, d in s["per_type"].items()], paper="Table 8")
    order = {sev: i for i, sev in enumerate(SEVERITIES)}
    severities = sorted(s["per_severity"].items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
    t9 = Table("Combined hit rate by severity", ["Severity", "Hit rate", "Hits", "Due"],
               [[sev, ratio(d["hit_rate"]), number(d["hit"]), number(d["due"])]
                for sev, d in severities], paper="Table 9")
    t10 = Table("Combined detection by round", ["Round", *DETECTION_COLUMNS],
                [_detection_row(r, d) for r, d in s["per_round"].items()],
                "Due: the defects due at that round over all tasks; a round with few is noisy.",
                "Table 10")
    return [t5, t7, t8, t9, t10, confusion_table(s), tracking_table(s["tracking"])]


def confusion_table(s: dict) -> Table:
    """Figure 5 as a table: gold states down, predicted states across."""
    matrix = s["state_confusion"]
    labels = list(matrix) or list(STATE_ORDER)
    return Table("State confusion, gold x predicted", ["Gold \\ Predicted", *labels],
                 [[gold, *(number(matrix[gold].get(p, 0)) for p in labels)] for gold in labels],
                 "Combined matched pairs.", "Figure 5")


def _tracking_rows(name: str, tr: dict) -> list[list[str]]:
    settled_n, errors = tr.get("settled_n", 0), tr.get("settled_errors", 0)
    settled_acc = 1 - errors / settled_n if settled_n else None
    live_errors = round(tr["n"] * (1 - tr["state_accuracy"])) if tr["n"] else 0
    recalls = tr.get("recall_by_state") or {}
    return [[name, "Live", number(tr["n"]), ratio(tr["state_accuracy"]),
             ratio(tr["balanced_accuracy"]), ratio(recalls.get("Open")),
             ratio(recalls.get("Resolved")), number(live_errors)],
            [name, "Settled", number(settled_n), ratio(settled_acc), "-", "-", "-",
             number(errors)]]


def tracking_table(tr: dict) -> Table:
    """Live pairs (accuracy and balanced accuracy) and settled pairs (errors), with the naive
    baseline's figures beside roundwise's when the summary carries them."""
    rows = _tracking_rows("roundwise", tr)
    baseline = tr.get("baseline")
    if baseline:
        rows += _tracking_rows("naive baseline", baseline)
    return Table("Tracking: states of defects told in earlier rounds",
                 ["System", "Pairs", "N", "Accuracy", "Balanced accuracy", "Recall Open",
                  "Recall Resolved", "Errors"], rows,
                 "Live: unresolved at t-1 (Open vs Resolved). Settled: Resolved at t-1."
                 + ("" if baseline else " No naive baseline in this summary."))


def aacr_tables(a: dict) -> list[Table]:
    """AACR-Bench: line-level and semantic P/R/F1, recall by context, negatives matched."""
    def row(label: str, d: dict) -> list[str]:
        return [label, ratio(d["precision"]), ratio(d["recall"]), ratio(d["f1"]),
                number(d["tp"]), number(d["findings"]), number(d["due"])]

    main = Table("AACR-Bench", ["Level", "Precision", "Recall", "F1", "Matched", "Findings",
                                "Comments"],
                 [row("Line", a["line"]), row("Semantic", a["semantic"])],
                 "Line: same file and lines within tolerance. Semantic: and the judge agrees.")
    context = Table("AACR-Bench semantic recall by context", ["Context", "Recall", "Comments"],
                    [[level, ratio(rec), number(a["context_due"].get(level, 0))]
                     for level, rec in a["recall_by_context"].items()])
    neg = a["negatives_matched"]
    negatives = Table("AACR-Bench findings matching expert-rejected comments",
                      ["Matched", "Share of findings", "Rejected comments"],
                      [[number(neg["count"]), ratio(neg["share"]), number(neg["negatives"])]])
    langs = Table("AACR-Bench semantic P/R/F1 by language",
                  ["Language", "Precision", "Recall", "F1", "Matched", "Findings", "Comments"],
                  [row(lang, d) for lang, d in a["per_language"].items()])
    return [main, context, negatives, langs]


def cost_table(s: dict) -> Table:
    """Tokens and seconds: totals and per-round mean, median and p99."""
    tok, sec = s["tokens"], s["seconds"]
    return Table("Tokens and seconds per round",
                 ["Measure", "Total", "Mean per round", "Median per round", "p99 per round"],
                 [["Tokens", number(tok["total"]), number(tok["per_round_mean"], 1),
                   number(tok["per_round_median"], 1), number(tok["per_round_p99"], 1)],
                  ["Seconds", number(sec["total"], 2), number(sec["per_round_mean"], 2),
                   number(sec["per_round_median"], 2), number(sec["per_round_p99"], 2)]],
                 f"Prompt tokens {number(tok['prompt'])}, completion tokens "
                 f"{number(tok['completion'])}, cost {s.get('cost', 0.0):.4f}.")


def github_table(g: dict) -> Table:
    """The bot's GitHub requests per round (``summary["github"]``, from ``bench.run``)."""
    labels = {"requests": "Requests", "charged": "Charged to the rate limit",
              "not_modified": "Answered 304 (free)", "app_jwt": "Installation-token requests"}
    return Table("GitHub requests per round",
                 ["Measure", "Total", "Mean per round", "Median per round", "p95 per round",
                  "Max per round"],
                 [[label, number(g[key]["total"]), number(g[key]["per_round_mean"], 2),
                   number(g[key]["per_round_median"]), number(g[key]["per_round_p95"]),
                   number(g[key]["per_round_max"])] for key, label in labels.items()],
                 f"Over {g['rounds']} replayed rounds, each task on its own App installation "
                 f"(a round: its review and the people's events after it); "
                 f"{g['not_modified_share'] * 100:.1f}% of requests were conditional reads "
                 "answered 304, which GitHub does not count against the rate limit.")


def tables(summary: dict) -> list[Table]:
    """Every table of the report, in order (MCR tables only when MCR rounds were scored)."""
    out: list[Table] = []
    if summary["detection"].get("rounds", summary["rounds"]):
        out += own_tables(summary)
        out += detection_tables(summary)
    if summary.get("aacr"):
        out += aacr_tables(summary["aacr"])
    out.append(cost_table(summary))
    if summary.get("github", {}).get("rounds"):
        out.append(github_table(summary["github"]))
    return out


# --- plots -----------------------------------------------------------------------------------


def _png(figure) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def plot_f1_per_round(summary: dict) -> str:
    """F1 per round index, combined and the bot's own, as a line plot whose round labels
    carry each round's number of due defects; base64 PNG."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 3.5))
    ax = figure.add_subplot()
    per_round = summary.get("per_round") or {}
    own = (summary.get("own") or {}).get("per_round") or {}
    xs = [int(name[1:]) for name in per_round]
    if xs:
        for metric, style in (("f1", "o-"), ("precision", "s--"), ("recall", "^:")):
            ax.plot(xs, [d[metric] for d in per_round.values()], style,
                    label=f"combined {metric}")
        if own:
            ax.plot(xs, [own.get(name, {}).get("f1", 0.0) for name in per_round], "D-",
                    color="black", label="own f1")
        ax.set_xticks(xs, labels=[f"R{x}\n{d['due']} due" for x, d in
                                  zip(xs, per_round.values(), strict=True)])
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    else:
        ax.text(0.5, 0.5, "no multi-round results", ha="center", va="center")
    ax.set_xlabel("round (defects due)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Detection per round")
    return _png(figure)


def plot_state_confusion(summary: dict) -> str:
    """The gold x predicted state counts as an annotated heatmap, base64 PNG."""
    from matplotlib.figure import Figure

    matrix = summary.get("state_confusion") or {g: {} for g in STATE_ORDER}
    labels = list(matrix)
    values = [[matrix[g].get(p, 0) for p in labels] for g in labels]
    figure = Figure(figsize=(4.5, 4))
    ax = figure.add_subplot()
    image = ax.imshow(values, cmap="Blues")
    peak = max((v for row in values for v in row), default=0)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center",
                    color="white" if peak and v > peak / 2 else "black")
    ax.set_xticks(range(len(labels)), labels=labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels=labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    ax.set_title("State confusion")
    figure.colorbar(image, ax=ax)
    return _png(figure)


# --- rendering -------------------------------------------------------------------------------


def _md_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _environment(autoescape: bool) -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html", "j2"]) if autoescape else False,
                      keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = _md_cell
    return env


def run_header(summary: dict) -> list[tuple[str, str]]:
    """(label, value) pairs saying what produced the figures."""
    run = summary.get("run") or {}
    judge = summary.get("judge") or {}
    model = run.get("model")
    reviewer = ("offline static checks (no LLM)" if model == "offline"
                else f"LLM {model}" if model else "-")
    if run.get("baseline"):
        reviewer = f"{run['baseline']} baseline, {reviewer}"
    version = run.get("version") or "-"
    return [
        ("roundwise", f"{version}" + (f" (commit {run['commit']})" if run.get("commit") else "")),
        ("date", str(run.get("date") or "-")),
        ("reviewer", reviewer),
        ("model", str(model or "-")),
        ("judge", ", ".join(f"{k} {v}" for k, v in judge.items()) or "-"),
        ("line tolerance", str(summary.get("tolerance", "-"))),
        ("tasks", f"{summary.get('tasks', 0)} ({summary.get('rounds', 0)} task-rounds scored"
                  + (f", {summary['skipped_records']} record(s) skipped"
                     if summary.get("skipped_records") else "") + ")"),
    ]


def offline_warning(summary: dict) -> str:
    """A plain sentence when the reviewer was the offline one, else ""."""
    if (summary.get("run") or {}).get("model") != "offline":
        return ""
    text = ("The reviewer was offline: no LLM, only the static checks; its own detection is "
            "what those checks find.")
    carried, tp = (summary.get("carried") or {}).get("tp"), summary["detection"].get("tp")
    if carried and tp:
        text += (f" {carried} of the {tp} matched findings are defects people raised, which "
                 f"the tracker carried forward.")
    return text


def _context(summary: dict) -> dict:
    return {"s": summary, "tables": tables(summary), "header": run_header(summary),
            "offline": offline_warning(summary)}


def render_markdown(summary: dict) -> str:
    """report.md's text."""
    return _environment(False).get_template("report.md.j2").render(**_context(summary))


def render_html(summary: dict, conversations: list[tuple[str, str]] = ()) -> str:
    """report.html's text, plots included; ``conversations`` are (task, href) links to the
    pages showing what the bot posted (``bench.replay.posted``)."""
    return _environment(True).get_template("report.html.j2").render(
        **_context(summary), f1_png=plot_f1_per_round(summary),
        confusion_png=plot_state_confusion(summary), conversations=list(conversations))


def write_reports(summary: dict, out_dir: str | Path,
                  conversations: list[tuple[str, str]] = ()) -> tuple[Path, Path]:
    """Write report.md and report.html into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, html = out / "report.md", out / "report.html"
    md.write_text(render_markdown(summary), encoding="utf-8")
    html.write_text(render_html(summary, conversations), encoding="utf-8")
    return md, html


# --- comparing runs --------------------------------------------------------------------------


def load_summary(run_dir: str | Path) -> dict:
    """A run's summary.json (``run_dir`` may also name the file itself)."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / "summary.json"
    if not path.is_file():
        raise ReportError(f"{run_dir}: no summary.json there; give the directory of a finished "
                          f"bench run (the run writes summary.json when it scores)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: cannot read the summary: {exc}") from exc
    if not isinstance(data, dict) or "detection" not in data:
        raise ReportError(f"{path}: not a bench summary (no 'detection')")
    return data


def _get(summary: dict, dotted: str):
    value = summary
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


# (label, dotted key, decimals; None for a rate shown with three decimals)
HEADLINES = [
    ("own precision, round 1", "own.round_1.precision", None),
    ("own recall, round 1", "own.round_1.recall", None),
    ("own F1, all rounds", "own.f1", None),
    ("detection precision", "detection.precision", None),
    ("detection recall", "detection.recall", None),
    ("detection F1", "detection.f1", None),
    ("state accuracy", "state_accuracy", None),
    ("tracking accuracy", "tracking.state_accuracy", None),
    ("tracking balanced accuracy", "tracking.balanced_accuracy", None),
    ("tracking settled errors", "tracking.settled_errors", 0),
]
COSTS = [
    ("tokens per round (mean)", "tokens.per_round_mean", 1),
    ("seconds per round (median)", "seconds.per_round_median", 2),
    ("seconds per round (p99)", "seconds.per_round_p99", 2),
]


def _compare_rows(a: dict, b: dict) -> list[tuple[str, str, int | None]]:
    rows = list(HEADLINES)
    languages = sorted(set(a.get("per_language") or {}) | set(b.get("per_language") or {}))
    rows += [(f"F1 {lang}", f"per_language.{lang}.f1", None) for lang in languages]
    if a.get("human_signal") or b.get("human_signal"):  # exported or mined tasks
        rows += [("agreement with people: states", "human_signal.state_agreement", None),
                 ("agreement with people: tracking", "human_signal.tracking.state_accuracy",
                  None),
                 ("human-signal states", "human_signal.labelled_states", 0)]
    if a.get("aacr") or b.get("aacr"):
        rows += [("AACR line F1", "aacr.line.f1", None),
                 ("AACR semantic F1", "aacr.semantic.f1", None)]
    return rows + COSTS


def _fmt(value, digits: int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if digits is None else f"{value:.{digits}f}"


def _delta(x, y, digits: int | None) -> str:
    if x is None or y is None:
        return "-"
    d = y - x
    return f"{d:+.3f}" if digits is None else f"{d:+.{digits}f}"


def compare(summary_a: dict, summary_b: dict, names: tuple[str, str] = ("A", "B")) -> str:
    """A text table of the headline figures of two runs and their deltas (B - A)."""
    header = ["metric", names[0], names[1], "B - A"]
    lines = []
    for label, key, digits in _compare_rows(summary_a, summary_b):
        x, y = _get(summary_a, key), _get(summary_b, key)
        lines.append([label, _fmt(x, digits), _fmt(y, digits), _delta(x, y, digits)])
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(4)]

    def fmt(row: list[str]) -> str:
        return "  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in
                                                      zip(row[1:], widths[1:], strict=True)])

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, lines)]) + "\n"


def compare_runs(run_a: str | Path, run_b: str | Path) -> str:
    """``compare`` on two run directories, naming them in the header."""
    return compare(load_summary(run_a), load_summary(run_b),
                   (f"A: {Path(run_a).name}", f"B: {Path(run_b).name}"))
