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


def graded_lines(stderr: str) -> list[str]:
    """The per-submission lines of a grade run's standard error (student, path, points)."""
    return [line for line in stderr.splitlines() if line.count("  ") >= 2 and "/" in line.split("  ")[-1]]


def test_a_rerun_says_what_it_skipped_and_regrades_on_request(tmp_path):
    """Each graded submission gets a line and the run its counts; a rerun skips what is
    unchanged and says how to regrade; --regrade STUDENT and --force regrade; an unknown
    student is one line, exit 2."""
    import shutil

    from notebooks import solution

    for student in ("ana", "bo"):
        (tmp_path / "class" / student).mkdir(parents=True)
        shutil.copy(solution("04_gpt_head"), tmp_path / "class" / student / "04_gpt_head.ipynb")
    run = lambda *extra: grader("grade", str(tmp_path / "class"), "--out", str(tmp_path / "book"),  # noqa: E731
                                "--jobs", "2", "--lang", "en", *extra)
    first = run()
    assert first.returncode == 0, first.stderr
    lines = graded_lines(first.stderr)
    assert sorted(line.split()[0] for line in lines) == ["ana", "bo"], first.stderr
    assert all(line.split()[-1] == "15/15" or "/" in line.split()[-1] for line in lines)
    assert "graded: 2; skipped, already in the gradebook unchanged: 0" in first.stderr
    assert "04_gpt_head: 2 graded, mean " in first.stderr and ", median " in first.stderr, first.stderr
    again = run()
    assert "graded: 0; skipped, already in the gradebook unchanged: 2" in again.stderr, again.stderr
    one = run("--regrade", "bo")
    assert [line.split()[0] for line in graded_lines(one.stderr)] == ["bo"], one.stderr
    assert "graded: 1; skipped, already in the gradebook unchanged: 1" in one.stderr
    everyone = run("--force")
    assert "graded: 2; skipped, already in the gradebook unchanged: 0" in everyone.stderr, everyone.stderr
    nobody = run("--regrade", "zoe")
    assert nobody.returncode == 2 and nobody.stderr.strip().count("\n") == 0 and "zoe" in nobody.stderr


def test_a_grade_stopped_at_a_limit_is_regraded_when_the_limit_is_raised(tmp_path):
    """A submission whose item timed out under --timeout 10 is graded again by a rerun
    with --timeout 300 (the grader's own advice), not skipped; an unchanged one that
    finished is skipped whatever the limits."""
    import hashlib

    from grader.outputs.gradebook import Gradebook

    path = tmp_path / "ana" / "04.ipynb"
    path.parent.mkdir()
    path.write_text("{}")
    book = Gradebook(tmp_path / "book", "en", graded_with={"lang": "en"})
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    limits = {"timeout": 10.0, "memory": 2**32}
    entry = {"student": "ana", "sha256": sha, "settings": {"lang": "en"}, "limits": limits,
             "items": [{"item": "sample_next", "verdict": "timeout"}]}
    book.entries[str(path)] = entry
    assert book.is_current(path, limits)
    assert not book.is_current(path, {**limits, "timeout": 300.0})
    assert not book.is_current(path, {**limits, "memory": 2**34})
    book.entries[str(path)] = {**entry, "items": [{"item": "sample_next", "verdict": "pass"}]}
    assert book.is_current(path, {**limits, "timeout": 300.0})


def test_the_layouts_an_lms_hands_out_name_the_right_students(tmp_path):
    """A Canvas bulk download (one flat folder, login_userid_subid_name.ipynb, LATE too) is
    one student per Canvas user id; nbgrader's submitted/<student>/<assignment>/ tree is
    one per student folder; a loose notebook is its own student, not the class folder."""
    from grader.outputs.gradebook import empty_folders, find_notebooks, several

    canvas = tmp_path / "canvas"
    canvas.mkdir()
    for name in ("parkdana_101_9001_04_gpt_head.ipynb", "kimbo_LATE_102_9002_homework.ipynb"):
        (canvas / name).write_text("{}")
    assert [s for s, _ in find_notebooks([canvas])] == ["102", "101"]
    (tmp_path / "class" / "ana").mkdir(parents=True)
    for path in (tmp_path / "class" / "ana" / "04.ipynb", tmp_path / "class" / "loose.ipynb"):
        path.write_text("{}")
    assert [s for s, _ in find_notebooks([tmp_path / "class"])] == ["ana", "loose"]
    assert [s for s, _ in find_notebooks([tmp_path / "class" / "ana"])] == ["ana"]  # one student's folder
    course = tmp_path / "course"
    for student, assignment in (("ana", "ps1"), ("ana", "ps2"), ("bo", "ps1")):
        (course / "submitted" / student / assignment).mkdir(parents=True)
        (course / "submitted" / student / assignment / "04_gpt_head.ipynb").write_text("{}")
    (course / "submitted" / "cy").mkdir()  # a student with nothing handed in
    found = find_notebooks([course])
    assert [s for s, _ in found] == ["ana", "ana", "bo"]
    assert empty_folders([course], found) == [str(course / "submitted" / "cy")]
    entries = {str(p): {"student": s, "chapter": "04_gpt_head"} for s, p in found}
    assert several(entries, set(entries)) == ["ana (04_gpt_head, 2)"]


def test_a_canvas_roster_matches_a_bulk_downloads_user_ids():
    rows = [{"Student": "Park, Dana", "ID": "101", "SIS User ID": "", "SIS Login ID": "dpark", "Section": ""}]
    matched, unmatched, absent = platforms.roster_match({"101": {"04_gpt_head": 15}}, rows)
    assert matched == [(rows[0], "101")] and not unmatched and not absent
