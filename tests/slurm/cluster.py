"""A throw-away single-node Slurm cluster on 127.0.0.1, for tests/test_slurm.py.

Started as root from Debian 12's packages (munge, mariadb-server, slurmdbd, slurmctld, slurmd,
slurm-client): munged, MariaDB, slurmdbd, slurmctld and slurmd each run in the foreground as a
child of this process, so every one is known by its PID and stopped by it. Everything lives in
one temporary directory except the two files Slurm only finds at its default path,
/etc/slurm/slurm.conf and /etc/slurm/gres.conf (the job-step plugin strips SLURM_CONF from each
job): they carry a marker line, are never written over a file without it, and are removed on stop.

The node has the machine's CPUs and memory (from `slurmd -C`) and one fake GPU (a GRES `gpu`
with File=/dev/null), and is in two partitions, `cpu` (default) and `gpu`, the names
profiles/slurm/partitions.yaml uses. Ports are free ports on 127.0.0.1, chosen at start.

By hand (as root):  python tests/slurm/cluster.py  starts it, prints how to reach it, and
stops everything on Enter or Ctrl-C.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import string
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARKER = "# Written by accel-choice tests/slurm/cluster.py"
SLURM_CONF = Path("/etc/slurm/slurm.conf")
GRES_CONF = Path("/etc/slurm/gres.conf")
TOOLS = (
    "munged",
    "mungekey",
    "mariadbd",
    "mariadb-install-db",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sbatch",
    "srun",
    "squeue",
    "sacct",
    "sacctmgr",
    "sinfo",
    "scontrol",
    "scancel",
)
APT_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge", "slurmdbd", "mariadb-server")


class ClusterError(RuntimeError):
    """The cluster could not be started (the message names the step and its log)."""


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def foreign_config() -> Path | None:
    """A Slurm config at the default path that this module did not write (never touched)."""
    for path in (SLURM_CONF, GRES_CONF):
        if path.exists() and not path.read_text(errors="replace").startswith(MARKER):
            return path
    return None


def owner_pid(path: Path) -> int | None:
    """The process that wrote our config file, if it is still alive (a cluster in use)."""
    try:
        first = path.read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    match = re.match(re.escape(MARKER) + r" \(pid (\d+)\)", first)
    if match and Path(f"/proc/{match.group(1)}").exists():
        return int(match.group(1))
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM")}
    env.update(extra)
    return env


class SlurmCluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.daemons: list[tuple[str, subprocess.Popen]] = []
        self.written: list[Path] = []
        self.timings: dict[str, float] = {}
        self.cpus = 0
        self.ports = {}

    # ------------------------------------------------------------------ helpers
    def run(
        self, *command: str, timeout: float = 30, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env or clean_env())
        if check and result.returncode != 0:
            raise ClusterError(f"{' '.join(command)} failed ({result.returncode}): {result.stdout}{result.stderr}")
        return result

    def spawn(self, name: str, *command: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env or clean_env(),
            start_new_session=True,
        )
        log.close()
        self.daemons.append((name, proc))
        return proc

    def wait_for(self, what: str, ready, timeout: float, proc: subprocess.Popen | None = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{what}: the daemon exited ({proc.returncode}); see {self.root / 'log'}")
            try:
                if ready():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.2)
        raise ClusterError(f"{what}: not ready after {timeout:.0f} s; see {self.root / 'log'}")

    @staticmethod
    def port_open(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def render(self, template: str, target: Path, values: dict, mode: int = 0o644) -> None:
        text = string.Template((HERE / template).read_text()).substitute(values)
        text = text.replace(MARKER, f"{MARKER} (pid {os.getpid()})", 1)
        target.write_text(text)
        target.chmod(mode)

    # ------------------------------------------------------------------ start
    def start(self, timeout: float = 120) -> None:
        """Bring the cluster up; on any failure stop what was started and raise ClusterError."""
        if os.geteuid() != 0:
            raise ClusterError("a test cluster needs root")
        if missing := missing_tools():
            raise ClusterError(f"missing: {', '.join(missing)} (apt-get install {' '.join(APT_PACKAGES)})")
        if found := foreign_config():
            raise ClusterError(f"{found} exists and was not written by this module; not touching it")
        if (pid := owner_pid(SLURM_CONF)) is not None:
            raise ClusterError(f"another test cluster (process {pid}) is using {SLURM_CONF}")
        started = time.monotonic()
        try:
            self._start(deadline=started + timeout)
        except ClusterError:
            self.stop()
            raise
        except Exception as error:  # a command that timed out or failed to start, a surprise in its output
            self.stop()
            raise ClusterError(f"bring-up failed: {error!r}; see {self.root / 'log'}") from error
        except BaseException:  # Ctrl-C: still leave nothing running
            self.stop()
            raise
        self.timings["bring_up_s"] = time.monotonic() - started

    def _left(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClusterError("bring-up ran past its time limit")
        return left

    def _start(self, deadline: float) -> None:
        for sub in ("log", "run", "state", "spool", "etc", "munge", "db"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        (self.root / "munge").chmod(0o700)
        self.ports = {name: free_port() for name in ("slurmctld", "slurmd", "slurmdbd", "mariadb")}
        db_password = secrets.token_hex(12)
        munge_socket = self.root / "munge" / "munge.socket"
        t0 = time.monotonic()

        # munge: our own key and socket, so a system munged (if any) is neither used nor disturbed.
        key = self.root / "munge" / "munge.key"
        self.run("mungekey", "--create", "--keyfile", str(key))
        key.chmod(0o400)
        munged = self.spawn(
            "munged",
            "munged",
            "--foreground",
            "--force",
            f"--socket={munge_socket}",
            f"--key-file={key}",
            f"--pid-file={self.root / 'run' / 'munged.pid'}",
            f"--log-file={self.root / 'log' / 'munged.log'}",
            f"--seed-file={self.root / 'munge' / 'munged.seed'}",
        )
        self.wait_for(
            "munged",
            lambda: self.run("munge", "-n", "-S", str(munge_socket), check=False, timeout=5).returncode == 0,
            self._left(deadline),
            munged,
        )
        self.timings["munge_s"] = time.monotonic() - t0

        # MariaDB for slurmdbd: a private data directory, TCP on 127.0.0.1 only.
        t0 = time.monotonic()
        db = self.root / "db"
        datadir, db_socket, db_tmp = db / "data", db / "mysqld.sock", db / "tmp"
        db_tmp.mkdir()
        common = (
            "--no-defaults",
            f"--datadir={datadir}",
            f"--tmpdir={db_tmp}",
            "--user=root",
            "--skip-name-resolve",
            "--innodb-log-file-size=8M",
        )
        self.run(
            "mariadb-install-db",
            *common,
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            timeout=self._left(deadline),
        )
        mariadb = self.spawn(
            "mariadbd",
            "mariadbd",
            *common,
            f"--socket={db_socket}",
            f"--port={self.ports['mariadb']}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self.root / 'run' / 'mariadbd.pid'}",
            f"--log-error={self.root / 'log' / 'mariadbd.log'}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=128M",
            "--innodb-lock-wait-timeout=900",
        )
        self.wait_for(
            "mariadbd",
            lambda: db_socket.exists() and self.port_open(self.ports["mariadb"]),
            self._left(deadline),
            mariadb,
        )
        self.run(
            "mariadb",
            "--no-defaults",
            f"--socket={db_socket}",
            "-u",
            "root",
            "-e",
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{db_password}'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';",
            timeout=self._left(deadline),
        )
        self.timings["mariadb_s"] = time.monotonic() - t0

        # Node description from the hardware itself (slurmd -C), plus the fake GPU.
        node = self.run("slurmd", "-C", timeout=self._left(deadline)).stdout
        self.cpus = int(re.search(r"\bCPUs=(\d+)", node).group(1))
        memory = int(re.search(r"\bRealMemory=(\d+)", node).group(1))
        values = {
            "host": self.host,
            "root": self.root,
            "munge_socket": munge_socket,
            "cpus": self.cpus,
            "real_memory": memory,
            "mem_per_cpu": max(256, min(2000, memory // self.cpus // 2)),
            "slurmctld_port": self.ports["slurmctld"],
            "slurmd_port": self.ports["slurmd"],
            "slurmdbd_port": self.ports["slurmdbd"],
            "mariadb_port": self.ports["mariadb"],
            "db_password": db_password,
        }
        SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
        for template, target in (("slurm.conf.in", SLURM_CONF), ("gres.conf.in", GRES_CONF)):
            self.written.append(target)
            self.render(template, target, values)
        self.render("slurmdbd.conf.in", self.root / "etc" / "slurmdbd.conf", values, mode=0o600)

        # slurmdbd reads slurmdbd.conf from the folder of SLURM_CONF; everything else uses the default path.
        t0 = time.monotonic()
        slurmdbd = self.spawn(
            "slurmdbd", "slurmdbd", "-D", env=clean_env(SLURM_CONF=str(self.root / "etc" / "slurm.conf"))
        )
        self.wait_for("slurmdbd", lambda: self.port_open(self.ports["slurmdbd"]), self._left(deadline), slurmdbd)
        self.run("sacctmgr", "-i", "add", "cluster", "accelci", check=False, timeout=self._left(deadline))
        self.timings["slurmdbd_s"] = time.monotonic() - t0

        t0 = time.monotonic()
        slurmctld = self.spawn("slurmctld", "slurmctld", "-D", "-c", "-i")
        self.wait_for(
            "slurmctld",
            lambda: self.run("scontrol", "ping", check=False, timeout=5).returncode == 0,
            self._left(deadline),
            slurmctld,
        )
        slurmd = self.spawn("slurmd", "slurmd", "-D")

        def node_idle() -> bool:
            state = self.run("sinfo", "-h", "-N", "-o", "%T", check=False, timeout=5).stdout.split()
            return bool(state) and all(s.rstrip("*") == "idle" for s in state)

        self.wait_for("slurmd (node idle)", node_idle, self._left(deadline), slurmd)
        self.timings["slurm_s"] = time.monotonic() - t0

    # ------------------------------------------------------------------ stop
    def alive(self) -> list[tuple[str, int]]:
        return [(name, proc.pid) for name, proc in self.daemons if proc.poll() is None]

    def stop(self) -> None:
        """Cancel every job, stop every daemon started here by its PID (newest first), remove our files.

        Safe to call twice and after a failed start.
        """
        ctld = dict(self.daemons).get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            try:
                self.run("scancel", "--full", "-u", "root", check=False, timeout=10)
                deadline = time.monotonic() + 20
                while (
                    time.monotonic() < deadline
                    and self.run("squeue", "-h", "-o", "%i", check=False, timeout=5).stdout.strip()
                ):
                    time.sleep(0.5)
            except (OSError, subprocess.SubprocessError):
                pass
        for name, proc in reversed(self.daemons):
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
                except ProcessLookupError:
                    pass
        if not self.alive():
            shutil.rmtree(self.root / "db" / "data", ignore_errors=True)  # ~100 MB; the logs stay
        for path in self.written:
            if path.exists() and path.read_text(errors="replace").startswith(f"{MARKER} (pid {os.getpid()})"):
                path.unlink()
        self.written.clear()

    def logs(self, tail: int = 3000) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="accel-slurm-") as tmp:
        cluster = SlurmCluster(Path(tmp))
        try:
            cluster.start()
            print(f"up in {cluster.timings['bring_up_s']:.1f} s ({cluster.timings}); daemons: {cluster.alive()}")
            print(subprocess.run(["sinfo"], capture_output=True, text=True).stdout)
            input("Enter stops the cluster: ")
        except KeyboardInterrupt:
            pass
        except ClusterError as error:
            print(f"{error}\n{cluster.logs()}")
        finally:
            cluster.stop()
            print("stopped; still alive:", cluster.alive())
