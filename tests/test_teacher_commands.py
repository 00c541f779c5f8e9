"""The teacher's commands on bad or surprising input: Canvas's Points Possible checked
against the chapter's, a missing gradebook or secret file named in one line (exit 2,
never Python's "[Errno 2]" form)."""
import csv

import grader.outputs.platforms as platforms
from conftest import grader

COLUMN = "Homework 4 (777)"


def roster(path, points: str):
    fields = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", COLUMN]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerow({"Student": "    Points Possible", COLUMN: points})
        writer.writerow({"Student": "Park, Dana", "ID": "1", "SIS Login ID": "dana", COLUMN: ""})
    return path


def test_points_possible_that_differ_from_the_chapters_are_named(tmp_path):
    rows, possible = platforms.read_roster(roster(tmp_path / "roster.csv", "10"))
    assert [r["Student"] for r in rows] == ["Park, Dana"] and possible[COLUMN] == "10"
    column = lambda chapter: COLUMN
    assert platforms.points_differ(possible, {"04_gpt_head": 14}, column) == [(COLUMN, "10", 14)]
    assert platforms.points_differ(possible, {"04_gpt_head": 10}, column) == []
    assert platforms.points_differ({}, {"04_gpt_head": 14}, column) == []  # a new column: nothing to compare


def test_export_canvas_without_a_gradebook_is_one_clear_line(tmp_path):
    done = grader("export", "canvas", "--out", str(tmp_path / "canvas.csv"), "--lang", "en", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no gradebook.json" in done.stderr and "Errno" not in done.stderr
    assert not (tmp_path / "canvas.csv").exists()


def test_report_and_feedback_without_a_gradebook_say_so_in_one_line(tmp_path):
    for command in ("report", "feedback"):
        done = grader(command, str(tmp_path / "gbx"), "--out", str(tmp_path / command), "--lang", "es")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"grader {command}: ") and "no hay gradebook.json" in done.stderr
        assert "Errno" not in done.stderr and not (tmp_path / command).exists()


def test_a_missing_secret_file_is_named_without_python_errno(tmp_path):
    done = grader("export", "gradescope", "04_gpt_head", "--secret", str(tmp_path / "nokey"),
                  "--out", str(tmp_path / "a.zip"), "--lang", "en")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"grader export: {tmp_path / 'nokey'}: ") and "Errno" not in done.stderr
