"""The formats teachers already use, and grading a class in shards.

Each output is validated against a JSON schema written from the platform's published
specification (tests/schemas/), and the Gradescope entry point runs in a temporary root
laid out as Gradescope lays it out.  The chapter is the NumPy one (04), the fastest.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from built_book import Chromium, find_chromium
from conftest import grader
from notebooks import ROOT

CHAPTER = "04_gpt_head"
SCHEMAS = Path(__file__).parent / "schemas"


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def small_class(tmp_path_factory) -> Path:
    """Four students: two solved the chapter, two handed in the untouched exercise."""
    root = tmp_path_factory.mktemp("class")
    for student, folder in (("ana", "solutions"), ("bo", "exercises"), ("chen", "solutions"), ("dara", "exercises")):
        (root / student).mkdir()
        shutil.copy(ROOT / folder / f"{CHAPTER}.ipynb", root / student / f"{CHAPTER}.ipynb")
    return root


@pytest.fixture(scope="module")
def single_run(small_class, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single")
    done = grader("grade", str(small_class), "--jobs", "2", "--out", str(out), "--lang", "es")
    assert done.returncode == 1, done.stderr  # two exercises fail
    return out


def without_timing(entries: dict) -> dict:
    return {path: {k: v for k, v in e.items() if k != "seconds"} for path, e in entries.items()}


def test_shards_merge_into_the_gradebook_of_a_single_run(small_class, single_run, tmp_path):
    shards = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = grader("grade", str(small_class), "--shard", f"{k}/2", "--jobs", "1", "--out", str(out), "--lang", "es")
        assert done.returncode in (0, 1), done.stderr
        shards.append(out)
    sizes = [len(json.loads((s / "gradebook.json").read_text())["submissions"]) for s in shards]
    assert sum(sizes) == 4
    merged = tmp_path / "merged"
    done = grader("merge", str(merged), *map(str, shards), "--lang", "es")
    assert done.returncode == 0, done.stderr
    single = json.loads((single_run / "gradebook.json").read_text())["submissions"]
    joined = json.loads((merged / "gradebook.json").read_text())["submissions"]
    assert without_timing(joined) == without_timing(single)
    assert (merged / "gradebook.csv").read_text() == (single_run / "gradebook.csv").read_text()
    # Overlapping shards are refused with one line.
    again = grader("merge", str(tmp_path / "twice"), str(shards[0]), str(shards[0]))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "Traceback" not in again.stderr


CLUSTER = ROOT / "docs" / "cluster"


def points(gradebook: Path) -> dict[str, int]:
    entries = json.loads((gradebook / "gradebook.json").read_text())["submissions"]
    return {e["student"]: e["points"] for e in entries.values()}


def cluster_env(tmp_path: Path, small_class: Path) -> dict[str, str]:
    """Where the scripts find the class, the secret and the grader, and put the shards."""
    (tmp_path / "teacher.key").write_text("a teacher's secret\n")
    return {**os.environ, "CLASS": str(small_class), "SECRET": str(tmp_path / "teacher.key"),
            "SHARDS": str(tmp_path / "shards"), "GRADEBOOK": str(tmp_path / "gradebook"), "GRADE_LANG": "es",
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GRADER": "grader"}


def test_the_slurm_array_grades_and_merges_as_one_run(small_class, single_run, tmp_path, bwrap_ready):
    """Each task as Slurm starts it (its id and the array's size in the environment),
    then the merge."""
    env = cluster_env(tmp_path, small_class)
    for k in (1, 2):
        task = {**env, "SLURM_ARRAY_TASK_ID": str(k), "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_CPUS_PER_TASK": "1"}
        done = subprocess.run(["bash", str(CLUSTER / "grade.slurm")], env=task, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    done = subprocess.run(["bash", str(CLUSTER / "merge.slurm")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert points(tmp_path / "gradebook") == points(single_run)


def test_the_kubernetes_indexed_job_grades_and_merges_as_one_run(small_class, single_run, tmp_path,
                                                                bwrap_ready):
    """Each pod's command, as the indexed Job runs it (JOB_COMPLETION_INDEX from 0), with
    the manifest's environment pointed at this machine's folders, then the merge Job's."""
    grade, merge = yaml.safe_load_all((CLUSTER / "grade-jobs.yaml").read_text())
    assert grade["spec"]["completionMode"] == "Indexed"
    ours = cluster_env(tmp_path, small_class)

    def run(job: dict, **extra) -> subprocess.CompletedProcess:
        container = job["spec"]["template"]["spec"]["containers"][0]
        env = {**{e["name"]: e["value"] for e in container["env"]}, **extra}
        env.update({k: ours[k] for k in env if k in ("CLASS", "SECRET", "SHARDS", "GRADEBOOK")})
        return subprocess.run([*container["command"], *container["args"]], env={**ours, **env}, capture_output=True,
                              text=True, timeout=600)

    count = grade["spec"]["completions"]
    shard_count = next(e["value"] for e in grade["spec"]["template"]["spec"]["containers"][0]["env"]
                       if e["name"] == "SHARD_COUNT")
    assert int(shard_count) == count
    for index in range(count):  # 8 shares of 4 students: some are empty
        done = run(grade, JOB_COMPLETION_INDEX=str(index), GRADE_LANG="es")
        assert done.returncode == 0, done.stderr
    done = run(merge, GRADE_LANG="es")
    assert done.returncode == 0, done.stderr
    assert points(tmp_path / "gradebook") == points(single_run)


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1/0", "x", "1/2/3"])
def test_a_shard_that_names_no_share_is_a_usage_error(bad, tmp_path):
    done = grader("grade", str(tmp_path), "--shard", bad, "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "--shard" in done.stderr and "Traceback" not in done.stderr


def canvas_rows(path: Path) -> tuple[dict, list[dict]]:
    """The Points Possible row and the students' rows, each validated."""
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    for row in rows:
        jsonschema.validate(row, schema("canvas_gradebook"))
    assert rows[0]["Student"] == "Points Possible"
    return rows[0], rows[1:]


def test_canvas_csv_without_a_roster_has_one_row_per_folder_and_says_so(single_run, tmp_path):
    out = tmp_path / "canvas.csv"
    done = grader("export", "canvas", "--gradebook", str(single_run), "--out", str(out), "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert "--roster" in done.stderr  # the warning
    possible, rows = canvas_rows(out)
    assert [r["Student"] for r in rows] == ["ana", "bo", "chen", "dara"]
    column = next(c for c in rows[0] if CHAPTER in c)
    assert [float(r[column]) for r in rows][1::2] == [0, 0] and float(rows[0][column]) == float(possible[column]) > 0


ROSTER = [  # as Canvas exports a gradebook, with its own Points Possible row
    {"Student": "    Points Possible", "ID": "", "SIS User ID": "", "SIS Login ID": "", "Section": ""},
    {"Student": "Ana Pérez", "ID": "101", "SIS User ID": "s-101", "SIS Login ID": "ANA", "Section": "A"},
    {"Student": "Bo Kim", "ID": "102", "SIS User ID": "s-102", "SIS Login ID": "bo", "Section": "A"},
    {"Student": "Chen Li", "ID": "103", "SIS User ID": "chen", "SIS Login ID": "cli", "Section": "B"},
    {"Student": "Eve Moreau", "ID": "105", "SIS User ID": "s-105", "SIS Login ID": "eve", "Section": "B"},
]


def test_canvas_export_round_trips_a_roster(single_run, tmp_path):
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=[*ROSTER[0], "Homework 1 (555)"])
        writer.writeheader()
        writer.writerows({**row, "Homework 1 (555)": ""} for row in ROSTER)
    out = tmp_path / "canvas.csv"
    done = grader("export", "canvas", "--gradebook", str(single_run), "--roster", str(roster), "--out", str(out),
                  "--column", "Homework 4 (777)", "--lang", "en")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and "dara" in lines[0], done.stderr
    assert lines[1].startswith("No submission for: Eve Moreau ("), done.stderr
    possible, rows = canvas_rows(out)
    assert list(possible) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 4 (777)"]
    assert [{k: r[k] for k in ROSTER[0]} for r in rows] == ROSTER[1:]  # every roster row, as it was
    scores = [r["Homework 4 (777)"] for r in rows]
    assert float(scores[0]) == float(scores[2]) == float(possible["Homework 4 (777)"]) > 0  # by login, by SIS id
    assert float(scores[1]) == 0 and scores[3] == ""  # a stub; no submission


def test_a_roster_that_is_not_a_canvas_export_is_a_usage_error(single_run, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\nAna,ana@example.org\n")
    done = grader("export", "canvas", "--gradebook", str(single_run), "--roster", str(roster),
                  "--out", str(tmp_path / "canvas.csv"))
    assert done.returncode == 2 and "SIS Login ID" in done.stderr and done.stderr.count("\n") == 1


def test_gradescope_and_prairielearn_results_for_wrong_and_missing_files(tmp_path):
    for command, inbox, name in (("gradescope", "submission", "gradescope_results"),
                                 ("prairielearn", "student", "prairielearn_results")):
        root = tmp_path / command
        (root / inbox).mkdir(parents=True)
        done = grader(command, "--root", str(root), "--chapter", CHAPTER, "--lang", "es")
        assert done.returncode == 0, done.stderr
        missing = json.loads((root / "results" / "results.json").read_text())
        jsonschema.validate(missing, schema(name))
        assert missing.get("score", 0) == 0 and missing.get("gradable", False) is False
        if command == "prairielearn":  # where PrairieLearn shows why it could not grade
            assert missing["format_errors"] and "message" not in missing
        assert str(root / inbox) in done.stdout  # the platform's log says what happened (it said nothing)
        shutil.copy(ROOT / "exercises" / f"{CHAPTER}.ipynb", root / inbox / f"{CHAPTER}.ipynb")
        done = grader(command, "--root", str(root), "--chapter", CHAPTER, "--lang", "es")
        assert done.returncode == 0, done.stderr
        results = json.loads((root / "results" / "results.json").read_text())
        jsonschema.validate(results, schema(name))
        assert results["score"] == 0 and results["tests"]
        assert all("sin implementar" in (t.get("output") or t.get("message")) for t in results["tests"][1:])
        assert "sin implementar" in done.stdout and "0/" in done.stdout, done.stdout  # the table, in the log


def grade_as_prairielearn_does(piece: Path, question: str, student_file: Path,
                               grade: Path) -> subprocess.CompletedProcess:
    """Lay out ``grade`` (standing for /grade) from the question's info.json alone, as
    PrairieLearn's docs describe it, and run the entry point with the image's Python
    (this environment, where the package is installed as the image installs it)."""
    options = json.loads((piece / "questions" / question / "info.json").read_text())["externalGradingOptions"]
    for entry in options["serverFilesCourse"]:
        shutil.copytree(piece / "serverFilesCourse" / entry, grade / "serverFilesCourse" / entry)
    if (piece / "questions" / question / "tests").is_dir():
        shutil.copytree(piece / "questions" / question / "tests", grade / "tests")
    (grade / "student").mkdir()
    shutil.copy(student_file, grade / "student" / f"{CHAPTER}.ipynb")
    (grade / "data").mkdir()
    (grade / "data" / "data.json").write_text("{}")
    entrypoint = Path(str(grade) + options["entrypoint"].removeprefix("/grade"))
    entrypoint.chmod(0o755)  # PrairieLearn does chmod +x on an entry point under /grade
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run([str(entrypoint)], capture_output=True, text=True, env=env, timeout=options["timeout"])


def test_the_prairielearn_piece_grades_from_its_own_info_json(tmp_path):
    piece = tmp_path / "piece"
    done = grader("export", "prairielearn", CHAPTER, "--out", str(piece), "--image", "course/tied", "--lang", "es")
    assert done.returncode == 0, done.stderr
    question = f"tied-{CHAPTER}"
    options = json.loads((piece / "questions" / question / "info.json").read_text())["externalGradingOptions"]
    assert options["enabled"] is True and options["image"] == "course/tied"
    assert 30 < options["timeout"] <= 600  # measured from a cold grade, with margin
    assert "pip install" in (piece / "image" / "Dockerfile").read_text()
    assert (piece / "image" / "tied" / "grader" / "cli.py").is_file()
    assert f'file-names="{CHAPTER}.ipynb"' in (piece / "questions" / question / "question.html").read_text()
    staff = (piece / "README.md").read_text()
    assert str(options["timeout"]) in staff
    assert "What this image does not protect" in staff and "two folders" not in staff
    for folder, score in (("solutions", 1.0), ("exercises", 0.0)):
        grade = tmp_path / folder / "grade"
        ran = grade_as_prairielearn_does(piece, question, ROOT / folder / f"{CHAPTER}.ipynb", grade)
        assert ran.returncode == 0, ran.stderr
        results = json.loads((grade / "results" / "results.json").read_text())
        jsonschema.validate(results, schema("prairielearn_results"))
        assert results["score"] == score and results["gradable"] is True


def test_the_class_report_is_one_offline_page(single_run, tmp_path):
    out = tmp_path / "report.html"
    done = grader("report", str(single_run), "--out", str(out), "--lang", "ko")
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "http://" not in page and "https://" not in page
    assert page.count("<img") == 1  # one chapter, one distribution
    assert "common.not_implemented" not in page and "가장 자주 나온 실수" in page  # messages, not keys
    assert page.count("<table") == page.count("<tbody><tr>")  # no table without rows
    assert page.count("<h3>") == 6  # the stubs' mistakes, item by item, each with its own hint
    assert "학생별 점수" in page and page.count("<tr><td>") >= 4 + 5  # a row per student, per item


def test_report_and_feedback_pages_in_chromium_at_1280_and_390(single_run, tmp_path):
    """Screenshots in test-artifacts/report/; no page is wider than the screen (wide
    tables scroll in their box), and the per-student table sorts by a clicked column."""
    report, feedback = tmp_path / "report.html", tmp_path / "feedback"
    assert grader("report", str(single_run), "--out", str(report), "--lang", "es").returncode == 0
    done = grader("feedback", str(single_run), "--out", str(feedback))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in feedback.iterdir()) == ["ana.html", "bo.html", "chen.html", "dara.html"]
    stub = (feedback / "bo.html").read_text()
    assert '<html lang="es">' in stub  # the gradebook's language
    assert "sin implementar" in stub.lower() and "ejemplo resuelto que falló" in stub
    assert "cross_entropy_from_logits(np.zeros((3, 5))" in stub  # the worked example, with its output
    assert "<a href" not in stub and "file://" not in stub  # no --book: no link into the teacher's machine
    assert "http://" not in stub and "https://" not in stub
    artifacts = ROOT / "test-artifacts" / "report"
    browser = Chromium(find_chromium())
    try:
        for width, height in ((1280, 900), (390, 844)):
            tab = browser.tab(width, height)
            for name, page in (("report", report), ("feedback-bo", feedback / "bo.html")):
                tab.open(page)
                assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (name, width)
                tab.screenshot(artifacts / f"{name}-{width}.png")
            tab.open(report)
            tab.evaluate("document.querySelector('table.sortable').scrollIntoView()")  # clicks land on screen
            first = "document.querySelector('table.sortable tbody tr td').textContent"
            tab.click("table.sortable th:nth-child(2)")  # the total, highest first
            assert tab.evaluate(first) in ("ana", "chen")
            tab.click("table.sortable th:nth-child(2)")
            assert tab.evaluate(first) in ("bo", "dara")
            tab.close()
    finally:
        browser.close()


def test_canvas_export_warns_of_points_possible_and_leaves_ungraded_cells_empty(single_run, tmp_path):
    """The course's Points Possible differs from the chapter's: one line says so (the
    chapter list was overwritten by the warnings' loop, and it never fired); a notebook
    that could not be graded is an empty cell and a line, not a silent 0."""
    gradebook = tmp_path / "gradebook"
    gradebook.mkdir()
    book = json.loads((single_run / "gradebook.json").read_text())
    book["submissions"]["class/eve/broken.ipynb"] = {"student": "eve", "error": "bad.json",
                                                     "message": "not JSON"}
    (gradebook / "gradebook.json").write_text(json.dumps(book))
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=[*ROSTER[0], "Homework 4 (777)"])
        writer.writeheader()
        writer.writerows({**row, "Homework 4 (777)": "99" if n == 0 else ""} for n, row in enumerate(ROSTER))
    out = tmp_path / "canvas.csv"
    done = grader("export", "canvas", "--gradebook", str(gradebook), "--roster", str(roster), "--out", str(out),
                  "--column", "Homework 4 (777)", "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert "99 points possible" in done.stderr, done.stderr
    assert "Not graded" in done.stderr and "eve" in done.stderr.split("Not graded", 1)[1], done.stderr
    _, rows = canvas_rows(out)
    assert next(r for r in rows if r["SIS Login ID"] == "eve")["Homework 4 (777)"] == ""
