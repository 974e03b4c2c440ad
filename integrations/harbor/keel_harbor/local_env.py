"""Harbor's environment interface over a scratch directory on this machine.

For machines without a container runtime (CI here has a Docker client but no daemon): each
command runs in a private mount namespace whose root is the scratch directory. The host's
``/usr``, ``/etc``, ``/var`` and ``/opt`` are mounted there as overlays (reads see the host's
system, writes land in the scratch directory), ``/proc``, ``/sys`` and ``/dev`` are bound, and
everything else (``/app``, ``/logs``, ``/tests``, ``/tmp``, ``/root``) is the scratch
directory's own. The host's home, its other folders and its files outside those system trees
are not visible. Processes and the network are the host's: a command may leave a process
running for the next one, as in a container, and ``stop`` ends every process whose root is
the scratch directory.

It keeps tasks apart from the host's files; it is no security boundary against hostile code:
commands run as the host's root, with its capabilities, its devices under ``/dev`` and its
``/proc``, as they would in a privileged container. Run untrusted agents or tasks under Docker
or a sandbox provider.

A task's ``environment/Dockerfile`` is read, not built: ``FROM`` is noted (the host's system
stands in for the image), and ``WORKDIR``, ``ENV``, ``COPY`` (from the environment folder) and
``RUN`` are carried out in the scratch root. Any other instruction is refused with its line,
as are tasks that ask for network isolation or extra mounts: this environment cannot give them.

Linux only; root, or a kernel that lets users create user namespaces with overlay mounts.
Use it with ``--environment-import-path keel_harbor.local_env:LocalEnvironment``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from harbor.environments.base import BaseEnvironment, ExecResult, SandboxBuildFailedError
from harbor.environments.options import EnvironmentOptions

# Host trees the scratch root sees through overlays, and kernel trees it binds.
_OVERLAID = ("usr", "etc", "var", "opt")
_BOUND = ("proc", "sys", "dev")
_OWN = ("tmp", "root", "home", "run", "mnt")

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Runs as root in a new mount namespace: builds the root, switches to it, runs the command.
# Arguments: scratch directory, working directory, user ('' for root), command, then KEY=VALUE.
_ENTER = r"""
set -eu
S=$1; cwd=$2; user=$3; cmd=$4; shift 4
R=$S/root
mount --bind "$R" "$R"
for d in usr etc var opt; do
  if [ -d "/$d" ] && [ ! -L "/$d" ]; then
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$S/upper/$d,workdir=$S/work/$d" "$R/$d"
  fi
done
for d in proc sys dev; do mount --rbind "/$d" "$R/$d"; done
cd "$R"
pivot_root . .host
umount -l /.host
cd / && cd "$cwd"
if [ -z "$user" ]; then
  exec env -i HOME=/root "PATH=$PATH_INSIDE" "$@" /bin/bash -c "$cmd"
fi
home=$(getent passwd "$user" | cut -d: -f6)
exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
  env -i "HOME=${home:-/}" "PATH=$PATH_INSIDE" "$@" /bin/bash -c "$cmd"
"""


class LocalEnvironmentOptions(EnvironmentOptions):
    """User-facing kwargs (``--ek``) of the local environment."""

    scratch_root: str | None = None
    """Where the scratch directories go (default: the system's temporary directory)."""


@dataclass
class _Plan:
    """What a Dockerfile asks of the local environment, in order."""

    base: str | None = None
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[str, Any]] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    out: list[tuple[int, str, str]] = []
    pending = ""
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        word, _, rest = pending.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        pending = ""
    if pending:
        word, _, rest = pending.partition(" ")
        out.append((start, word.upper(), rest.strip()))
    return out


def read_dockerfile(path: Path) -> _Plan:
    """The plan of a Dockerfile; `ValueError` names what this environment cannot do."""
    plan = _Plan()
    for n, word, rest in _instructions(path.read_text()):
        where = f"{path}:{n}"
        if word == "FROM":
            plan.base = rest
        elif word == "WORKDIR":
            target = PurePosixPath(plan.workdir, rest)
            plan.workdir = str(target)
            plan.steps.append(("mkdir", plan.workdir))
        elif word == "ENV":
            if "=" in rest.split(" ", 1)[0]:
                for item in shlex.split(rest):
                    key, _, value = item.partition("=")
                    plan.env[key] = value
            else:
                key, _, value = rest.partition(" ")
                plan.env[key] = value.strip()
        elif word == "COPY":
            parts = shlex.split(rest)
            if not parts or parts[0].startswith("--") or len(parts) < 2:
                raise ValueError(f"{where}: the local environment copies only `COPY SRC... DEST`")
            dest = parts[-1]
            into_dir = dest.endswith("/") or dest in (".", "./") or len(parts) > 2
            plan.steps.append(("copy", (parts[:-1], str(PurePosixPath(plan.workdir, dest)), into_dir)))
        elif word == "RUN":
            if rest.startswith("["):
                raise ValueError(f"{where}: the local environment runs only the shell form of RUN")
            plan.steps.append(("run", (rest, plan.workdir)))
        else:
            raise ValueError(
                f"{where}: the local environment cannot carry out `{word}` (it knows FROM, WORKDIR, ENV, COPY and RUN)"
            )
    return plan


class LocalEnvironment(BaseEnvironment):
    """A task's container as a scratch directory in a private mount namespace."""

    options_model = LocalEnvironmentOptions

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._plan = _Plan()
        self._scratch: Path | None = None
        super().__init__(*args, **kwargs)
        if self._host_mounts:
            raise ValueError("the local environment cannot mount host paths into the task's container")

    @staticmethod
    def type() -> str:
        return "keel-local"

    def _validate_definition(self) -> None:
        dockerfile = self.environment_dir / "Dockerfile"
        if dockerfile.is_file():
            self._plan = read_dockerfile(dockerfile)
        elif not self.task_env_config.docker_image:
            raise FileNotFoundError(f"{dockerfile} not found, and the task names no docker_image")

    @property
    def _root(self) -> Path:
        if self._scratch is None:
            raise RuntimeError("the local environment has not been started")
        return self._scratch / "root"

    async def start(self, force_build: bool) -> None:
        options = self.options if isinstance(self.options, LocalEnvironmentOptions) else None
        parent = options.scratch_root if options and options.scratch_root else None
        self._scratch = Path(tempfile.mkdtemp(prefix=f"keel-harbor-{self.environment_name}-", dir=parent))
        root = self._root
        root.mkdir()
        for name in _OVERLAID:
            (self._scratch / "upper" / name).mkdir(parents=True)
            (self._scratch / "work" / name).mkdir(parents=True)
        for entry in sorted(Path("/").iterdir()):
            # The host's merged-/usr links (/bin -> usr/bin) keep their meaning in the root.
            if entry.is_symlink() and entry.name not in _OWN:
                (root / entry.name).symlink_to(os.readlink(entry))
        for name in (*_OVERLAID, *_BOUND, *_OWN, ".host"):
            if not (root / name).is_symlink():
                (root / name).mkdir(exist_ok=True)
        (root / "tmp").chmod(0o1777)
        (root / "root").chmod(0o700)
        await self._build()
        await self._upload_environment_dir_after_start()
        await self.ensure_dirs(self._mount_targets(writable_only=True))

    async def _build(self) -> None:
        plan = self._plan
        if plan.base:
            self.logger.debug("local environment: %s stands in for FROM %s", "this machine's system", plan.base)
        for kind, arg in plan.steps:
            if kind == "mkdir":
                result = await self._run(f"mkdir -p {shlex.quote(arg)}", cwd="/", env={}, user=None)
            elif kind == "copy":
                sources, dest, into_dir = arg
                for source in sources:
                    await self._copy_in(self.environment_dir / source, dest, into_dir)
                continue
            else:
                command, cwd = arg
                result = await self._run(command, cwd=cwd, env=dict(plan.env), user=None)
            if result.return_code != 0:
                raise SandboxBuildFailedError(
                    f"building the local environment failed (exit {result.return_code}): {result.stderr or result.stdout}"
                )

    async def _copy_in(self, source: Path, dest: str, into_dir: bool) -> None:
        source = source.resolve()
        if not source.is_relative_to(self.environment_dir.resolve()):
            raise SandboxBuildFailedError(f"COPY source {source} lies outside the environment folder")
        if source.is_dir():
            await self.upload_dir(source, dest)
        elif into_dir:
            await self.upload_file(source, str(PurePosixPath(dest, source.name)))
        else:
            await self.upload_file(source, dest)

    async def stop(self, delete: bool) -> None:
        if self._scratch is None:
            return
        _kill_inside(self._root)
        if not delete:
            return
        scratch, self._scratch = self._scratch, None
        # overlayfs leaves its work directories unreadable; the owner may still remove them.
        def unlock(func: Any, path: str, _exc: Any) -> None:
            os.chmod(path, 0o700)
            func(path)

        shutil.rmtree(scratch, onexc=unlock)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        merged = {**self._plan.env, **(self._merge_env(env) or {})}
        workdir = cwd or self.task_env_config.workdir or self._plan.workdir
        return await self._run(command, cwd=workdir, env=merged, user=self._resolve_user(user), timeout_sec=timeout_sec)

    async def _run(
        self,
        command: str,
        *,
        cwd: str,
        env: dict[str, str],
        user: str | int | None,
        timeout_sec: int | None = None,
        stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None,
    ) -> ExecResult:
        if self._scratch is None:
            raise RuntimeError("the local environment has not been started")
        who = "" if user in (None, "root", 0, "0") else str(user)
        assignments = [f"{k}={v}" for k, v in env.items() if k != "PATH"]
        path_inside = env.get("PATH", _PATH)
        # No PID namespace: keel (and other tools) name cgroups by pid, and two environments
        # with PID namespaces of their own would share pids under the host's one cgroup tree.
        unshare = ["unshare", "--mount", "--propagation", "private", "--fork"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        argv = [*unshare, "/bin/sh", "-c", _ENTER, "keel-local", str(self._scratch), cwd, who, command, *assignments]
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=stdout if stdout is not None else asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": _PATH, "PATH_INSIDE": path_inside},
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except asyncio.TimeoutError:
            _kill_group(process)
            await process.wait()
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        except BaseException:
            _kill_group(process)
            raise
        return ExecResult(
            stdout=out.decode(errors="replace") if out else None,
            stderr=err.decode(errors="replace") if err else None,
            return_code=process.returncode or 0,
        )

    async def _transfer(self, command: str, *, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
        # Paths are resolved inside the scratch root, so a link a command planted there
        # cannot lead a copy onto the host.
        result = await self._run(command, cwd="/", env={}, user=None, stdin=stdin, stdout=stdout)
        if result.return_code != 0:
            raise RuntimeError(f"local environment transfer failed (exit {result.return_code}): {result.stderr}")

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = shlex.quote(target_path)
        parent = shlex.quote(str(PurePosixPath(target_path).parent))
        with open(source_path, "rb") as f:
            await self._transfer(f"mkdir -p {parent} && cat > {target}", stdin=f)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w") as tar:
                for entry in sorted(Path(source_dir).iterdir()):
                    tar.add(entry, arcname=entry.name)
            archive.seek(0)
            target = shlex.quote(target_dir)
            await self._transfer(f"mkdir -p {target} && tar -C {target} -xf -", stdin=archive)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        with open(target_path, "wb") as f:
            await self._transfer(f"cat {shlex.quote(source_path)}", stdout=f)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        target = Path(target_dir)
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile() as archive:
            await self._transfer(f"tar -C {shlex.quote(source_dir)} -cf - .", stdout=archive)
            archive.seek(0)
            skipped: list[str] = []

            def safe(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
                # Absolute names, `..` and links that leave the target stay behind; the rest
                # of the folder still arrives.
                try:
                    return tarfile.data_filter(member, dest)
                except tarfile.FilterError:
                    skipped.append(member.name)
                    return None

            with tarfile.open(fileobj=archive, mode="r") as tar:
                tar.extractall(target, filter=safe)
            if skipped:
                self.logger.warning("left in the environment (links or names leading out of %s): %s", target, skipped)


def _kill_inside(root: Path) -> None:
    """Ends the processes whose root directory is `root` (what the commands left running):
    their root, seen through /proc, is the same directory (device and inode)."""
    mine = os.stat(root)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            theirs = os.stat(entry / "root")
            if (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            continue


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
