"""README.md's examples run as written.

* Every ```python block is executed, the blocks of one section in order in one namespace (as in one
  interpreter). The blocks that use objects the README does not build (the Live section's ``frame``,
  ``confirmed_ids``, ``labels``, ``X``, ``y``) run after a set-up prelude, below, that builds small ones of the
  same kinds. Where a ```text block follows a snippet, it is what the snippet prints: the printed text must
  match it line by line, each number within one unit of its last displayed digit (the machine's timings, the
  ``time/run (s)`` column of a table, are not compared).
* Every ``jcsol`` command of the ```bash blocks parses; those on the shipped data run (with ``--perms 2``, the
  README showing no output of theirs).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from jcsol import cli

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^#+ (.+)$", re.M)
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
UNCOMPARED = ("time/run (s)",)  # columns of a table that hold the machine's timings

# The Live section's snippet serves and learns a payments table: a few hundred generated payments, a share of
# them confirmed (labelled) later, and a second labelled batch given as a table with its labels.
LIVE_PRELUDE = """
import jcsol
import numpy as np
import pandas as pd

_rng = np.random.default_rng(0)
def _payments(n, first_id):
    return pd.DataFrame({
        "payment_id": np.arange(first_id, first_id + n),
        "amount": _rng.lognormal(3.0, 1.0, n),
        "merchant": _rng.choice(["m1", "m2", "m3", "m4"], n),
        "country": _rng.choice(["FR", "DE", "US"], n),
    })
def _fraud(frame):
    return np.where((frame["amount"] > 60) & (frame["country"] == "US"), 1, -1).astype(np.int8)
frame = _payments(300, 0)
confirmed_ids = frame["payment_id"].to_numpy()[:200]
labels = _fraud(frame)[:200]
X = _payments(200, 1000)
y = _fraud(X)
"""
PRELUDES = {"jcsol.Live(": LIVE_PRELUDE}  # a prelude for each snippet holding this text


def fenced_blocks(text: str) -> list[tuple[str, str, str, int, int]]:
    """``(language, body, section heading, start, end)`` of every fenced block, in order."""
    out = []
    for m in FENCE.finditer(text):
        headings = HEADING.findall(text, 0, m.start())
        out.append((m.group(1), m.group(2), headings[-1] if headings else "", m.start(), m.end()))
    return out


def python_sections(text: str) -> dict[str, list[tuple[str, str | None]]]:
    """The ```python blocks of each section, in order, as ``(code, expected output or None)``: a ```text block
    right after a snippet (no heading and no other block between them) is what it prints."""
    blocks = fenced_blocks(text)
    out: dict[str, list[tuple[str, str | None]]] = {}
    for i, (lang, body, heading, _, end) in enumerate(blocks):
        if lang != "python":
            continue
        expected = None
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text" and not HEADING.search(text, end, blocks[i + 1][3]):
            expected = blocks[i + 1][1]
        out.setdefault(heading, []).append((body, expected))
    return out


def jcsol_commands(text: str) -> list[list[str]]:
    """The argument lists of every ``jcsol …`` command of the ```bash blocks (after ``&&`` too)."""
    commands = []
    for lang, body, *_ in fenced_blocks(text):
        if lang != "bash":
            continue
        for line in body.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["jcsol"]:
                    commands.append(words[1:])
    return commands


def cells(line: str) -> list[str]:
    """A table row's cells (columns are two or more spaces apart; a cell holds single spaces)."""
    return re.split(r"\s{2,}", line.strip())


def same_within_digits(actual: str, expected: str) -> bool:
    """``actual`` reads as ``expected``: the same text around the numbers, and each number within one unit of
    the last digit ``expected`` shows."""
    if NUMBER.sub("#", actual) != NUMBER.sub("#", expected):
        return False
    for a, e in zip(NUMBER.findall(actual), NUMBER.findall(expected)):
        mantissa = re.split("[eE]", e)[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        scale = 10.0 ** int(re.split("[eE]", e)[1]) if re.search("[eE]", e) else 1.0
        if abs(float(a) - float(e)) > 1.0001 * scale * 10.0**-decimals:
            return False
    return True


def assert_same_output(actual: str, expected: str) -> None:
    got = [line.rstrip() for line in actual.strip("\n").splitlines()]
    want = [line.rstrip() for line in expected.strip("\n").splitlines()]
    assert len(got) == len(want), f"printed {len(got)} lines, README shows {len(want)}:\n{actual}"
    skip: set[int] = set()
    for g, w in zip(got, want):
        row, shown = cells(g), cells(w)
        if any(title in shown for title in UNCOMPARED):
            skip = {k for k, title in enumerate(shown) if title in UNCOMPARED}
        assert len(row) == len(shown), f"printed\n  {g}\nREADME shows\n  {w}"
        for k, (a, e) in enumerate(zip(row, shown)):
            if k in skip or (set(a) == set(e) == {"-"}):
                continue
            assert same_within_digits(a, e), f"printed\n  {g}\nREADME shows\n  {w}\n(cell {a!r} against {e!r})"


TEXT = README.read_text(encoding="utf-8")
SECTIONS = python_sections(TEXT)
COMMANDS = jcsol_commands(TEXT)


def test_the_readme_has_examples_and_commands():
    assert len(SECTIONS) >= 2
    assert any(expected for blocks in SECTIONS.values() for _, expected in blocks)
    assert len(COMMANDS) >= 4


@pytest.mark.parametrize("section", list(SECTIONS))
def test_python_examples_run_and_print_what_the_readme_shows(section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets may write files (live.save)
    namespace: dict = {"__name__": "readme_example"}  # one per section: its snippets run in order
    for k, (code, expected) in enumerate(SECTIONS[section]):
        for marker, prelude in PRELUDES.items():
            if marker in code:
                exec(compile(prelude, "<README prelude>", "exec"), namespace)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"<README {section} #{k + 1}>", "exec"), namespace)
        if expected is not None:
            assert_same_output(out.getvalue(), expected)


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:3]) for c in COMMANDS])
def test_jcsol_command_parses(argv, monkeypatch):
    # main() parses the arguments, then hands them to the command's function: replaced here, parsing alone runs
    seen = []
    monkeypatch.setattr(cli, "_run", lambda args: seen.append(args) or "")
    monkeypatch.setattr(cli, "_reproduce", lambda args: seen.append(args) or "")
    assert cli.main(argv) == 0
    assert len(seen) == 1


def shipped_run(argv: list[str]) -> bool:
    data = argv[argv.index("--data") + 1] if "--data" in argv else "german"
    return argv[:1] == ["run"] and data == "german" and not {"--csv", "--json", "--plot"} & set(argv)


QUICK = [c for c in COMMANDS if shipped_run(c)]


@pytest.mark.parametrize("argv", QUICK, ids=[" ".join(c) for c in QUICK])
def test_jcsol_command_on_shipped_data_runs(argv, capsys):
    argv = list(argv)
    if "--perms" in argv:
        argv[argv.index("--perms") + 1] = "2"
    else:
        argv += ["--perms", "2"]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("learner "))
    rows = [line.split() for line in lines[header + 2 :]]
    learners = [row[0] for row in rows[: next((i for i, row in enumerate(rows) if not row), len(rows))]]
    assert learners, lines
    assert all(name.startswith(("COG", "ACOG")) for name in learners), lines


def test_output_comparison_catches_a_wrong_digit():
    shown = "\n".join(
        [
            "learner  sum (%)         time/run (s)",
            "-------  --------------  ------------",
            "ACOG-II  66.212 ± 1.234  2.46e-03",
        ]
    )
    assert_same_output(shown.replace("2.46e-03", "9.99e-01").replace("66.212", "66.213"), shown)
    for wrong in (shown.replace("66.212", "66.214"), shown.replace("ACOG-II", "ACOG-I "), shown + "\nmore"):
        with pytest.raises(AssertionError):
            assert_same_output(wrong, shown)
    assert same_within_digits("1.6e-03", "1.5e-03")
    assert not same_within_digits("1.7e-03", "1.5e-03")
