"""Files the grader writes for others (gradebook, report, feedback, exports) are
readable as the umask allows, not mkstemp's 0600; a file that holds the secret is not."""
import os
import stat

from conftest import grader
from grader.atomic import UMASK, write_atomic


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_have_an_ordinary_mode_and_secrets_stay_private(tmp_path):
    write_atomic(tmp_path / "report.html", "<p>hi</p>")
    assert mode(tmp_path / "report.html") == 0o666 & ~UMASK
    write_atomic(tmp_path / "secret.zip", b"key", private=True)
    assert mode(tmp_path / "secret.zip") == 0o600


def test_the_gradescope_zip_is_private_only_when_it_holds_the_secret(tmp_path):
    secret = tmp_path / "teacher.key"
    secret.write_text("s3cret\n")
    for name, extra in (("plain.zip", []), ("sealed.zip", ["--secret", str(secret)])):
        done = grader("export", "gradescope", "04_gpt_head", "--out", str(tmp_path / name), *extra)
        assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "plain.zip") == 0o666 & ~UMASK
    assert mode(tmp_path / "sealed.zip") == 0o600
