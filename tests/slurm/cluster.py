"""A private one-node SLURM cluster (munged + slurmctld + slurmd) that lives in one folder.

Everything a cluster needs is written under `root`: the munge key and socket, slurm.conf, the state
and spool folders and the logs; the daemons listen on free ports and are found by clients through
SLURM_CONF. Nothing touches /etc or the machine's own SLURM or munge, so a test can start and stop a
cluster next to anything else on the machine.

Chosen for containers (no systemd, no cgroup hierarchy to delegate): process tracking through /proc
(proctrack/linuxproc), no task plugin, no accounting daemon. Without accounting `sacct` fails;
submitit then logs a warning per poll and detects a job's end by its result pickle, which is all the
Hydra launcher waits for.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

# The commands the tests need; the daemons live in /usr/sbin, which may not be on a user's PATH.
TOOLS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scontrol", "scancel", "srun")
INSTALL_HINT = "apt-get install -y slurm-wlm munge (as root; bash .ci/run does it)"
START_TIMEOUT_S = 60
# slurmctld tests time limits every 30 s on its own clock (PERIODIC_TIMEOUT, not a setting): a job's
# --signal warning goes out at the first test less than 30 s before the warning time, and a job past
# its limit is ended at the first test after it. A requeued job is held back cred_expire seconds
# (default 120; here 5, the least SLURM takes), which also bounds how long a launch credential is valid:
# a launch takes about a second on two busy cores.
CHECK_PERIOD_S = 30.0
REQUEUE_HOLD_S = 5
CHECK_LINE = "debug2: Testing job time limits and checkpoints"


class ClusterError(RuntimeError):
    """The cluster could not start; the message says which daemon and ends with its log."""


def tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def missing_tools() -> list[str]:
    return [name for name in TOOLS if tool(name) is None]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Cluster:
    root: Path
    node: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment of a client: sbatch hands it on to the job, srun inside the job uses it."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *command: str, check: bool = True) -> str:
        proc = subprocess.run(
            [tool(command[0]) or command[0], *command[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-o", "%T", check=False).strip()

    def time_limit_checks(self) -> list[float]:
        """When slurmctld has tested job time limits so far (epoch seconds), from its timestamped log."""
        log = self.root / "slurmctld.timed.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        stamps = re.findall(rf"^\[([0-9T:.-]+)\] {re.escape(CHECK_LINE)}$", text, flags=re.MULTILINE)
        return [datetime.fromisoformat(stamp).timestamp() for stamp in stamps]

    def next_time_limit_check(self, after: float) -> float:
        """The first time-limit test at or after `after` (epoch seconds), extrapolated from the last
        ones (the period is 30 s plus the controller loop's lag); waits for a first test if none came yet."""
        deadline = time.monotonic() + 2 * CHECK_PERIOD_S
        while len(checks := self.time_limit_checks()) < 1:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"slurmctld logged no time-limit test in {2 * CHECK_PERIOD_S:.0f} s\n{self.logs()}"
                )
            time.sleep(0.5)
        recent = checks[-4:]
        period = (recent[-1] - recent[0]) / (len(recent) - 1) if len(recent) > 1 else CHECK_PERIOD_S
        steps = max(0, -(-(after - checks[-1]) // period))  # ceil
        return checks[-1] + steps * period

    def logs(self, lines: int = 15) -> str:
        """The end of every daemon's log, for a failure message."""
        parts = []
        for path in sorted(self.root.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def start(self) -> None:
        self._start_munge()
        self._write_conf()
        for daemon in ("slurmctld", "slurmd"):
            extra = ["-N", self.node] if daemon == "slurmd" else ["-i"]
            self._spawn(daemon, [daemon, "-D", "-f", str(self.conf), *extra])
        self._wait("the node to be idle", lambda: self.node_state() == "idle")

    def stop(self) -> None:
        """Cancel what is left, then end the daemons this cluster started (and only those)."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            self.run("scancel", "--user", getpass.getuser(), check=False)
            deadline = time.monotonic() + 15
            while self.run("squeue", "-h", check=False).strip() and time.monotonic() < deadline:
                time.sleep(0.5)
        for proc in reversed(self.processes.values()):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes.values():  # a throwaway cluster: no state worth a slow shutdown
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _spawn(self, name: str, command: list[str]) -> None:
        # In the foreground (-D, --foreground) a daemon logs to stderr: one log file per daemon.
        with (self.root / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [tool(command[0]) or command[0], *command[1:]],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
            )

    def _wait(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise ClusterError(
                        f"{name} exited ({proc.returncode}) while waiting for {what}\n{self.logs()}"
                    )
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError(f"timed out after {START_TIMEOUT_S} s waiting for {what}\n{self.logs()}")

    def _start_munge(self) -> None:
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        socket_path = self.root / "munge.socket"
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",  # the socket's folder is private (pytest's tmp is 0700): munged refuses it without
                f"--key-file={key}",
                f"--socket={socket_path}",
                f"--pid-file={self.root / 'munged.pid'}",
                f"--seed-file={self.root / 'munged.seed'}",
            ],
        )

        def answers() -> bool:
            probe = subprocess.run(
                [tool("munge") or "munge", "-n", "-S", str(socket_path)], capture_output=True, timeout=10
            )
            return probe.returncode == 0

        self._wait("munged to answer", answers)

    def _write_conf(self) -> None:
        (self.root / "state").mkdir(exist_ok=True)
        (self.root / "spool").mkdir(exist_ok=True)
        user = getpass.getuser()
        root = self.root
        lines = [
            "ClusterName=giant-test",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # cred_expire also holds a requeued job back this long (default 120 s); see REQUEUE_HOLD_S
            f"AuthInfo=socket={root / 'munge.socket'},cred_expire={REQUEUE_HOLD_S}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            "ProctrackType=proctrack/linuxproc",  # no cgroups in a container
            "TaskPlugin=task/none",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=2,bf_interval=2",  # a requeued job starts within seconds
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            "JobRequeue=1",
            "MinJobAge=10",  # finished jobs leave squeue/scontrol quickly
            "KillWait=2",  # SIGTERM to SIGKILL of a job's leftovers, e.g. once submitit requeued it
            # timestamped, with each time-limit test (debug2): the requeue test times its job by them
            f"SlurmctldLogFile={root / 'slurmctld.timed.log'}",
            "SlurmctldDebug=debug2",
            "InactiveLimit=0",
            "Waittime=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            f"{self._node_line()} NodeAddr=127.0.0.1 State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")

    def _node_line(self) -> str:
        """This machine's node line as slurmd measures it (`slurmd -C`), so the node is never drained
        for claiming more CPUs or memory than it has."""
        probe = subprocess.run([tool("slurmd") or "slurmd", "-C"], capture_output=True, text=True, timeout=30)
        line = probe.stdout.splitlines()[0] if probe.returncode == 0 and probe.stdout else ""
        if not line.startswith(f"NodeName={self.node} "):
            raise ClusterError(f"slurmd -C gave no node line for {self.node}: {probe.stdout}{probe.stderr}")
        return line


def start_cluster(root: Path) -> Cluster:
    cluster = Cluster(root=root, node=socket.gethostname().split(".")[0])
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
