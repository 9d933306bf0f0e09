"""Every result names what made it: code, command, versions, machine and date."""

import datetime
import subprocess
import sys
from unittest import mock

from placerl._provenance import _git_revision, provenance


def test_a_result_records_the_command_machine_date_and_versions(monkeypatch):
    monkeypatch.delenv("PLACERL_COMMAND", raising=False)  # no launching app recorded one
    with mock.patch.object(sys, "argv", ["/usr/bin/placerl-train", "cluster.spec=a b", "-m"]):
        record = provenance()
    assert record["command"] == "placerl-train 'cluster.spec=a b' -m"  # as a shell reads it
    assert record["machine"]["cores"] >= 1 and record["machine"]["cpu"]
    assert record["machine"]["gpus"] is None or isinstance(record["machine"]["gpus"], list)
    when = datetime.datetime.fromisoformat(record["date"])
    now = datetime.datetime.now(datetime.timezone.utc)
    assert when.tzinfo is not None and abs(now - when).total_seconds() < 60
    assert record["python"] and record["numpy"] and "git_revision" in record


def _git(folder, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def test_the_revision_says_when_the_checkout_has_uncommitted_changes(tmp_path):
    def git(*args):
        _git(tmp_path, *args)

    assert _git_revision(tmp_path) is None  # not a checkout
    git("init", "-q")
    (tmp_path / "f.txt").write_text("1")
    git("add", "f.txt")
    git("commit", "-q", "-m", "one")
    clean = _git_revision(tmp_path)
    assert len(clean) == 40 and not clean.endswith("+dirty")
    (tmp_path / "f.txt").write_text("2")
    assert _git_revision(tmp_path) == clean + "+dirty"


def test_rewritten_results_leave_the_checkout_clean(tmp_path):
    """A run that reads committed results back rewrites them as it goes: its later records
    are still of the commit's code. Any other change still marks the revision."""

    def git(*args):
        _git(tmp_path, *args)

    results = tmp_path / "benchmarks" / "results" / "tier"
    results.mkdir(parents=True)
    (results / "r.json").write_text("{}")
    (tmp_path / "code.py").write_text("1")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    package = tmp_path / "src" / "package"  # the folder asked from: any of the checkout's
    package.mkdir(parents=True)
    clean = _git_revision(package)
    (results / "r.json").write_text('{"runtime": 1}')
    assert _git_revision(package) == clean
    (tmp_path / "code.py").write_text("2")  # outside the folder asked from
    assert _git_revision(package) == clean + "+dirty"


def test_a_launchers_worker_records_the_command_the_user_typed(monkeypatch):
    from placerl._provenance import COMMAND_VARIABLE, record_command

    monkeypatch.delenv(COMMAND_VARIABLE, raising=False)
    monkeypatch.setattr(sys, "argv", ["/x/placerl-train", "-m", "seed=0,1"])
    record_command()  # the app, before its launcher starts the workers
    monkeypatch.setattr(sys, "argv", ["/x/loky_worker.py", "--pipe", "3"])  # a worker
    assert provenance()["command"] == "placerl-train -m seed=0,1"
    record_command()  # a nested start keeps the outer command
    assert provenance()["command"] == "placerl-train -m seed=0,1"
