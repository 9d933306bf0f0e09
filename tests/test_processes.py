"""Worker processes: a fork server where there is one, and the parent's current environment."""

import multiprocessing
import os

from placerl._processes import adopt_environment, start_method

VARIABLE = "PLACERL_TEST_WORKER_VARIABLE"


def _report(conn, environ):
    if environ is not None:
        adopt_environment(environ)
    conn.send(os.environ.get(VARIABLE))
    conn.close()


def _seen_by_a_worker(environ):
    context = multiprocessing.get_context(start_method())
    ours, theirs = context.Pipe()
    process = context.Process(target=_report, args=(theirs, environ))
    process.start()
    value = ours.recv()
    process.join(timeout=60)
    return value


def test_workers_see_the_environment_of_when_they_were_made(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    _seen_by_a_worker(None)  # the fork server, where there is one, is up before the change
    monkeypatch.setenv(VARIABLE, "now")
    assert _seen_by_a_worker(dict(os.environ)) == "now"
    if start_method() == "forkserver":  # why workers adopt it: the server's is older
        assert _seen_by_a_worker(None) is None


def test_the_start_method_is_a_fork_server_where_the_platform_has_one():
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert start_method() == expected
