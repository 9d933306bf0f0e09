"""placerl-bench beyond one machine: a two-job sweep through Hydra's submitit launcher on a
real single-node SLURM (Debian's slurm-wlm and munge), started here under a temp folder.

Where SLURM is not installed, or its daemons cannot start (not root), the test skips and says
why; ``.ci/run`` installs both packages with apt when it can.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip(
    "hydra_plugins.hydra_submitit_launcher", reason="hydra-submitit-launcher is not installed"
)

from placerl.bench import load_suite
from placerl.bench.run import record_path

#: What the fixture runs: the daemons (sbin) and the clients it and submitit call.
BINARIES = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "scancel")
INSTALL_HINT = "apt-get install slurm-wlm munge"
PARTITION = "local"
START_TIMEOUT_S = 30.0
SWEEP_TIMEOUT_S = 180.0  # submitit waits for ever on a job that died without its result


@dataclass(frozen=True)
class LocalSlurm:
    """A running single-node SLURM: its slurm.conf, its partition, its log folder."""

    conf: Path
    partition: str
    logs: Path

    def env(self) -> dict[str, str]:
        """This process's environment with ``SLURM_CONF`` set: sbatch, sinfo and the jobs
        (sbatch exports the environment) read this cluster's config, not /etc/slurm's."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of every daemon's log and output (where one that failed to start
        says why), for a failure's message."""
        tails = [(log.name, log.read_text().splitlines()[-lines:]) for log in self.logs.iterdir()]
        return "\n".join(f"--- {name}\n" + "\n".join(tail) for name, tail in sorted(tails) if tail)


def skip_reason() -> str | None:
    """Why a local SLURM cannot run here, or None where it can."""
    missing = [name for name in BINARIES if _which(name) is None]
    if missing:
        return f"SLURM is not installed: {', '.join(missing)} not found ({INSTALL_HINT})"
    if os.geteuid() != 0:  # slurmd starts jobs as their user, munged trusts the key's owner
        return "a local SLURM needs root to run slurmd and munged"
    return None


def _which(name: str) -> str | None:
    """``name`` on PATH or in the sbin folders, which a non-login root shell may lack."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")


def _free_port() -> int:
    """A TCP port nothing listens on now: a system SLURM's 6817/6818 stay untouched."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _node_hardware() -> str:
    """This machine's CPUs, sockets and memory as ``slurmd -C`` reports them (slurmd drains a
    node configured with more than it finds), or the CPU count alone."""
    done = subprocess.run(
        [_which("slurmd") or "slurmd", "-C"], capture_output=True, text=True, timeout=30
    )
    fields = re.findall(
        r"\b(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|"
        r"RealMemory)=(\d+)",
        done.stdout,
    )
    return " ".join(f"{k}={v}" for k, v in fields) or f"CPUs={os.cpu_count() or 1}"


def write_slurm_conf(root: Path, socket_path: Path) -> Path:
    """A slurm.conf for one node, localhost, whose every state, spool, pid and log file lies
    under ``root``. No cgroup (linuxproc, task/none) and no accounting (no slurmdbd), so
    nothing outside ``root`` is needed; the daemons and the jobs run as root."""
    for folder in ("state", "spool", "logs"):
        (root / folder).mkdir(exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=placerltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path}
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "logs" / "slurmctld.log"}
SlurmdLogFile={root / "logs" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 {_node_hardware()} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
    return conf


def _start(stack: ExitStack, command: list[str], log: Path, env: dict[str, str]) -> None:
    """Start a daemon in the foreground of its own process, stopped when ``stack`` closes."""
    out = stack.enter_context(log.open("w"))
    daemon = subprocess.Popen(
        command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    stack.callback(_stop, daemon)


def _stop(daemon: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the daemon is still there after a few seconds."""
    daemon.terminate()
    try:
        daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def _wait_for(ready: Callable[[], bool], what: str, cluster: LocalSlurm) -> None:
    """Poll ``ready()`` until it holds; skip the test (with the daemons' logs) if it never
    does: a machine where SLURM cannot start is not a failure of placerl."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if time.monotonic() > deadline:
            pytest.skip(
                f"the local SLURM did not start: {what} after {START_TIMEOUT_S:.0f} s\n"
                f"{cluster.log_tail(10)}"
            )
        time.sleep(0.2)


def _node_idle(cluster: LocalSlurm) -> bool:
    """Whether sinfo answers and shows the node idle (ready for jobs)."""
    command = ["sinfo", "--noheader", "--Node", "--format=%t", f"--partition={cluster.partition}"]
    done = subprocess.run(command, capture_output=True, text=True, env=cluster.env(), timeout=10)
    return done.returncode == 0 and done.stdout.strip() == "idle"


@pytest.fixture(scope="module")
def local_slurm(tmp_path_factory) -> Iterator[LocalSlurm]:
    """munged, slurmctld and slurmd on this machine, all files in a temp folder; stopped (and
    any job left cancelled) afterwards. munged gets its own key and socket there too, so
    /etc/munge is neither read nor written: ``--force`` lets it accept a socket below
    pytest's 0700 temp folders (it wants every parent directory searchable by all, which
    matters only when jobs run as users other than root)."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("slurm")
    key, socket_path = root / "munge.key", root / "munge" / "munge.socket"
    socket_path.parent.mkdir(mode=0o755)
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)  # munged refuses a key others can read
    cluster = LocalSlurm(write_slurm_conf(root, socket_path), PARTITION, root / "logs")
    env = cluster.env()
    sbin = {name: _which(name) or name for name in ("munged", "slurmctld", "slurmd")}
    with ExitStack() as stack:
        _start(
            stack,
            [
                sbin["munged"],
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={socket_path}",
                f"--pid-file={root / 'munged.pid'}",
                f"--seed-file={root / 'munged.seed'}",
                f"--log-file={root / 'logs' / 'munged.log'}",
            ],
            root / "logs" / "munged.out",
            env,
        )
        _wait_for(socket_path.exists, "munged made no socket", cluster)
        _start(
            stack,
            [sbin["slurmctld"], "-D", "-f", str(cluster.conf)],
            root / "logs" / "slurmctld.out",
            env,
        )
        _start(
            stack,
            [sbin["slurmd"], "-D", "-N", "localhost", "-f", str(cluster.conf)],
            root / "logs" / "slurmd.out",
            env,
        )
        # runs first when the stack closes: no job outlives slurmd
        scancel = ["scancel", f"--partition={cluster.partition}"]
        stack.callback(subprocess.run, scancel, env=env, capture_output=True, timeout=10)
        _wait_for(lambda: _node_idle(cluster), "sinfo shows no idle node", cluster)
        yield cluster


def _bench(cwd: Path, env: dict[str, str], *overrides: str) -> subprocess.CompletedProcess:
    """``placerl-bench`` as typed, in a fresh process (submitit pickles its job there)."""
    script = Path(sys.executable).with_name("placerl-bench")
    main = [sys.executable, "-c", "from placerl.apps import bench_app; bench_app()"]
    command = [str(script)] if script.exists() else main
    return subprocess.run(
        [*command, *overrides],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
    )


def test_a_bench_sweep_runs_its_jobs_through_slurm(local_slurm, tmp_path):
    sweep = tmp_path / "sweep"
    try:
        done = _bench(
            tmp_path,
            local_slurm.env(),
            "-m",
            "placer=heft,m_etf",
            "tier=tiny",
            "split=test",
            "hydra/launcher=slurm_cpu",
            f"hydra.launcher.partition={local_slurm.partition}",
            f"hydra.sweep.dir={sweep}",
        )
    except subprocess.TimeoutExpired:  # a job died without its result: say where and why
        pytest.fail(f"the sweep ran past {SWEEP_TIMEOUT_S:.0f} s\n{local_slurm.log_tail()}")
    assert done.returncode == 0, done.stderr[-3000:] + local_slurm.log_tail()
    # submitit's folder per job, named by its SLURM array job id, which slurmctld ran
    folders = (sweep / ".submitit").iterdir()
    jobs = sorted(p.name for p in folders if re.fullmatch(r"\d+_\d+", p.name))
    assert len(jobs) == 2, jobs
    controller = (local_slurm.logs / "slurmctld.log").read_text()
    for job in jobs:
        log = (sweep / ".submitit" / job / f"{job}_0_log.out").read_text()
        assert f"JobEnvironment(job_id={job}," in log and "Job completed successfully" in log
        assert re.search(rf"_job_complete: JobId={job}\(\d+\) done", controller), job
    # each job's records (one per case) and leaderboard, then the sweep's leaderboard
    cases = load_suite("placebench-v1").select("tiny", "test")
    for placer in ("heft", "m_etf"):
        (job_dir,) = sweep.glob(f"placer={placer},*")
        assert all(record_path(job_dir, case).is_file() for case in cases), placer
        assert (job_dir / "leaderboard.md").is_file() and not (job_dir / "error.txt").exists()
    summary = done.stdout.split(f"sweep {sweep}:", 1)
    assert len(summary) == 2, done.stdout[-2000:]
    assert "| heft" in summary[1] and "| m_etf" in summary[1]


def test_the_skip_names_what_is_missing(monkeypatch):
    """Without SLURM's binaries the test above skips and says which and how to install."""
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    reason = skip_reason()
    assert reason and "munged" in reason and "slurmd" in reason and INSTALL_HINT in reason


def test_the_cpu_slurm_launcher_asks_for_no_gpu():
    """What a CPU partition (and the local SLURM above) can give: one CPU, no GPU, the
    partition's default memory."""
    from hydra import compose, initialize_config_module

    import placerl.apps  # noqa: F401  (registers bench_schema)

    with initialize_config_module(config_module="placerl.configs", version_base=None):
        cfg = compose(
            config_name="bench", overrides=["hydra/launcher=slurm_cpu"], return_hydra_config=True
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.gpus_per_node, launcher.cpus_per_task, launcher.mem_gb) == (None, 1, None)
