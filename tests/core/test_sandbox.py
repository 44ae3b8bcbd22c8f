"""The per-cell sandbox with the real bwrap: what a cell sees, and that nothing it starts survives."""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from pytest_akmbench.agents import NopAgent, OracleAgent
from pytest_akmbench.cell import akm
from pytest_akmbench.cell.context import Cell, RunContext, fingerprint
from pytest_akmbench.cell.runner import run_cell
from pytest_akmbench.corpus.tasks import load_corpus
from pytest_akmbench.errors import ConfigError
from pytest_akmbench.scripted import snoop
from pytest_akmbench.system import sandbox, sandbox_doctor
from pytest_akmbench.system.procs import MARKER, ProcessTracker, become_subreaper
from tests.support import real_akm
from tests.support.bwrap import require_bwrap
from tests.support.corpus import write_stash, write_task
from tests.support.waiting import settle

ROOT = Path(__file__).resolve().parents[2]
ENV_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def cell(tmp_path: Path) -> Path:
    """A run dir like the runner's, with secrets beside it that the cell must not read."""
    run_dir = tmp_path / "cells" / "cell-me"
    for sub in ("workspace", "home", "tmp"):
        (run_dir / sub).mkdir(parents=True)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "solve.sh").write_text("the solution\n")
    (tmp_path / "cells" / "cell-other" / "workspace").mkdir(parents=True)
    (tmp_path / "cells" / "cell-other" / "workspace" / "notes.txt").write_text("another cell\n")
    return run_dir


def env_for(run_dir: Path, path: str = ENV_PATH) -> dict[str, str]:
    return {"PATH": path, "HOME": str(run_dir / "home"), "TMPDIR": str(run_dir / "tmp"), "LANG": "C.UTF-8"}


def run_in(box: sandbox.Sandbox, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cwd = box.run_dir / "workspace"
    env = env or env_for(box.run_dir)
    return subprocess.run(
        box.wrap(["/bin/bash", "-c", script], cwd, env),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        pass_fds=box.keep_fds,
    )


def readable(box: sandbox.Sandbox, path: Path) -> bool:
    return run_in(box, f"head -c 1 -- '{path}' >/dev/null").returncode == 0


# ---------------------------------------------------------------- choosing the mode


def test_none_needs_no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKMBENCH_BWRAP", "")
    assert sandbox.choose("none") == ("none", None)


def test_auto_falls_back_with_a_warning_and_bwrap_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKMBENCH_BWRAP", "")
    mode, warning = sandbox.choose("auto")
    assert mode == "none" and warning is not None and "UNSANDBOXED" in warning
    with pytest.raises(ConfigError, match=r"^--bench-sandbox bwrap: AKMBENCH_BWRAP='' is not an executable"):
        sandbox.choose("bwrap")


def test_a_bwrap_that_cannot_build_a_sandbox_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a machine without user namespaces says reaches the user, one line."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AKMBENCH_BWRAP", str(fake))
    mode, warning = sandbox.choose("auto")
    assert mode == "none" and "No permissions to creating new namespace" in str(warning)
    assert "\n" not in str(warning)


def test_parse_mode() -> None:
    assert [sandbox.parse_mode(m) for m in ("auto", "BWRAP", " none ")] == ["auto", "bwrap", "none"]
    with pytest.raises(ValueError, match="expected one of auto, bwrap, none"):
        sandbox.parse_mode("docker")


# ---------------------------------------------------------------- what a cell sees


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_cell_sees_only_itself(cell: Path, mode: str) -> None:
    """Sandboxed, the corpus, another cell and the project are unreadable; unsandboxed they are not."""
    if mode == "bwrap":
        require_bwrap()
    box = sandbox.for_cell(mode, cell)
    secrets = [
        cell.parent.parent / "corpus" / "solve.sh",
        cell.parent / "cell-other" / "workspace" / "notes.txt",
        ROOT / "README.md",
        ROOT / "corpus" / "tasks" / "tidectl" / "drain-cell" / "solution" / "solve.sh",
    ]
    assert [readable(box, s) for s in secrets] == [mode == "none"] * len(secrets)
    # ... and through /proc/<pid>/root of any process it can see
    proc = run_in(box, f'for p in /proc/[0-9]*; do head -c1 "$p/root{secrets[0]}" 2>/dev/null && exit 0; done; exit 1')
    assert (proc.returncode == 0) == (mode == "none")
    done = run_in(
        box, "echo made > made.txt && echo $HOME && python3 -c 'import json, sys; print(sys.version_info[0])'"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(cell / "home"), "3"]
    assert (cell / "workspace" / "made.txt").read_text() == "made\n"


def test_system_read_only_secrets_masked_processes_hidden(cell: Path) -> None:
    require_bwrap()
    box = sandbox.for_cell("bwrap", cell)
    box.expose(cell.parent.parent / "corpus")
    assert readable(box, cell.parent.parent / "corpus" / "solve.sh")
    assert run_in(box, f"touch '{cell.parent.parent / 'corpus' / 'x'}'").returncode != 0
    assert run_in(box, "touch /usr/x || touch /etc/x").returncode != 0
    assert readable(box, Path("/etc/passwd"))
    for path in (Path("/etc/shadow"), Path("/etc/gshadow")):
        if path.exists() and not path.stat().st_mode & 0o004:
            assert not readable(box, path), path
    pids = run_in(box, "ls /proc | grep -c '^[0-9]'").stdout.strip()
    assert int(pids) < 10, "the cell must see only its own processes"
    caps = run_in(box, "grep CapEff /proc/self/status").stdout.split()[-1]
    assert int(caps, 16) == 0, "no capability survives inside, even for root"


def test_a_cell_is_unprivileged_and_its_network_is_loopback_only(cell: Path) -> None:
    """What doctor measures: no capability, no new privileges, /proc/sys read-only, loopback
    only, and when the bench runs as root an unprivileged uid (issue 28, item 5)."""
    require_bwrap()
    assert sandbox_doctor.inspect() == {
        "uid": "unprivileged",
        "capabilities": "none",
        "new privileges": "none",
        "/proc/sys": "read-only",
        "network": "loopback only",
    }
    box = sandbox.for_cell("bwrap", cell)
    done = run_in(box, "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern; echo $?; id -u")
    code, uid = done.stdout.split()
    assert code != "0" and (uid == str(sandbox.SANDBOX_UID) if os.geteuid() == 0 else uid == str(os.geteuid()))
    assert (cell / "workspace").stat().st_uid == (sandbox.SANDBOX_UID if os.geteuid() == 0 else os.geteuid())
    # Nothing the harness handed the sandbox's first process (its code, the lifeline) is inherited.
    assert set(run_in(box, "ls /proc/$$/fd; true").stdout.split()) <= {"0", "1", "2", "255"}


def test_the_models_forwarder_is_the_only_way_out(cell: Path) -> None:
    """Inside, 127.0.0.1:MODEL_PORT reaches the model through the relay and the forwarder; the
    host's loopback does not exist there. With --bench-network host it is the host's again."""
    require_bwrap()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    fetch = "python3 -I -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())'"
    try:
        box = sandbox.for_cell("bwrap", cell)
        fwd, origin = box.route_model(f"http://127.0.0.1:{port}/v1", {})
        try:
            assert origin == f"http://127.0.0.1:{sandbox.MODEL_PORT}"
            inside = run_in(box, f"{fetch} {origin}/v1/x; {fetch} http://127.0.0.1:{port}/v1/x || echo DENIED")
        finally:
            fwd.close()
        assert inside.stdout.split() == ["hello", "DENIED"], inside
        host = sandbox.for_cell("bwrap", cell, network="host")
        assert run_in(host, f"{fetch} http://127.0.0.1:{port}/v1/x").stdout.split() == ["hello"]
    finally:
        server.shutdown()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def test_no_regular_file_of_the_user_home(cell: Path) -> None:
    """Parts of the home may exist as mount points (a pyenv Python), but none of its files."""
    require_bwrap()
    home = Path.home()
    out = run_in(sandbox.for_cell("bwrap", cell), f"find '{home}' -maxdepth 2 -type f 2>/dev/null | head")
    assert out.stdout == ""


def test_python_is_found_when_path_leads_elsewhere(cell: Path, tmp_path: Path) -> None:
    """A PATH whose python3 lies outside the sandbox (a pyenv shim) still finds the harness's Python."""
    require_bwrap()
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").symlink_to(sys.executable)
    env = env_for(cell, path=str(shims))
    out = run_in(sandbox.for_cell("bwrap", cell), "python3 -c 'print(42)'", env=env)
    assert out.returncode == 0 and out.stdout.strip() == "42", out.stderr


def test_paths_are_the_same_inside(cell: Path, tmp_path: Path) -> None:
    """A run dir reached through a symlink is there under both names, as opencode resolves it."""
    require_bwrap()
    link = tmp_path / "link"
    link.symlink_to(cell.parent)
    box = sandbox.for_cell("bwrap", link / "cell-me")
    out = run_in(box, f"cat '{cell}/workspace/../home/../workspace/f' 2>&1; echo x > '{cell}/workspace/f'; cat f")
    assert out.stdout.strip().endswith("x"), out


# ---------------------------------------------------------------- tools an agent needs


def test_tool_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "lib" / "node_modules" / "@acme" / "akm-cli"
    (pkg / "dist").mkdir(parents=True)
    (pkg / "package.json").write_text("{}")
    cli = pkg / "dist" / "cli.js"
    cli.write_text("#!/usr/bin/env python3\n")
    interp = Path(shutil.which("python3") or "").resolve()
    assert sandbox.tool_paths(cli)[0] == pkg
    assert interp.is_relative_to(sandbox.tool_paths(cli)[1])
    tool_dir = tmp_path / "tools" / "akm" / "0.9.0"
    tool_dir.mkdir(parents=True)
    (tool_dir / "akm").write_text('#!/bin/sh\nexec "$(dirname "$0")/bun" "$@"\n')
    assert sandbox.tool_paths(tool_dir / "akm")[0] == tool_dir
    binary = tmp_path / "rg"
    binary.write_bytes(b"\x7fELF")
    assert sandbox.tool_paths(binary) == [binary]
    monkeypatch.setenv("HOME", str(tool_dir))  # a script at the top of the home: only the file itself
    assert sandbox.tool_paths(tool_dir / "akm")[0] == tool_dir / "akm"


@pytest.mark.parametrize("version", real_akm.versions())
def test_real_akm_index_outside_search_inside(cell: Path, version: str) -> None:
    """akm's index records the stash path: built outside at the cell's path, it answers inside."""
    require_bwrap()
    info = real_akm.get(version)
    shutil.copytree(ROOT / "corpus" / "stashes" / "tidectl", cell / "stash")
    env = akm.cell_env(info, cell / "stash", akm.private_env(cell / "home", env_for(cell)))
    akm.write_config(info, env)
    subprocess.run([str(info.path), "index"], cwd=cell / "stash", env=env, capture_output=True, check=True, timeout=120)
    box = sandbox.for_cell("bwrap", cell, akm=info.path)
    out = run_in(box, f"'{info.path}' search 'tidectl rollback' 2>/dev/null", env=env)
    hits = akm.search_refs(out.stdout)
    assert hits is not None and hits[0] == akm.format_ref("skill:tidectl", info.line), out


# ---------------------------------------------------------------- nothing survives


def host_procs_with(tag: str, *, command: bytes = b"") -> dict[int, bytes]:
    """Live processes (host view) running ``command`` whose command line holds ``tag``, with their environment."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            stat = Path(f"/proc/{name}/stat").read_text()
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if tag.encode() in cmd and cmd.startswith(command) and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found[int(name)] = env
    return found


def zombie_children(comms: tuple[str, ...] = ("bwrap", "bash", "sleep", "true")) -> list[str]:
    """Our zombie children running one of ``comms`` (other tests may leave zombies of their own)."""
    out = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.split()[1].startswith("Z") and line.split()[2] in comms]


def wait_for(check, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    settle(check, within=timeout_s)
    return bool(check())


def background_script(tag: str) -> str:
    return (
        f"nohup sleep 600.{tag}1 >/dev/null 2>&1 &\n"
        f"setsid sleep 600.{tag}2 >/dev/null 2>&1 </dev/null &\n"
        f"(env -i setsid sleep 600.{tag}3 >/dev/null 2>&1 </dev/null &)\n"
        f"(setsid bash -c 'sleep 600.{tag}4 & sleep 600.{tag}5' >/dev/null 2>&1 </dev/null &)\n"
        f"sleep 600.{tag}6\n"
    )


def test_kill_all_leaves_nothing_and_marks_every_process(cell: Path) -> None:
    require_bwrap()
    assert become_subreaper()
    tag = f"7{uuid.uuid4().int % 10**8:08d}"
    procs = ProcessTracker(f"test-sandbox/{tag}")
    box = sandbox.for_cell("bwrap", cell)
    with box.applied(procs):
        procs.spawn(["bash", "-c", background_script(tag)], cwd=cell / "workspace", env=env_for(cell))
    assert procs.wrap is None, "the sandbox applies only while the agent runs"
    assert wait_for(lambda: len(host_procs_with(f"600.{tag}", command=b"sleep\0")) == 6)
    # The marker reaches every process that keeps its environment (not the `env -i` one); the
    # sweep still finds those, and the PID namespace's end takes all of them anyway.
    marker = f"{MARKER}={procs.marker_value}".encode()
    marked = [marker in env.split(b"\0") for env in host_procs_with(f"600.{tag}", command=b"sleep\0").values()]
    assert sorted(marked) == [False] + [True] * 5
    procs.kill_all()
    assert wait_for(lambda: not host_procs_with(f"600.{tag}"), 3), host_procs_with(f"600.{tag}")
    assert not host_procs_with(str(cell)), "bwrap itself is gone too"
    assert zombie_children() == [], "bwrap's inner process, orphaned onto us, is reaped"


def test_a_finished_command_leaves_no_zombie(cell: Path) -> None:
    """bwrap's outer process exits before its inner one: the inner one lands on us and is reaped."""
    require_bwrap()
    assert become_subreaper()
    procs = ProcessTracker(f"test-sandbox/{uuid.uuid4().hex}")
    with sandbox.for_cell("bwrap", cell).applied(procs):
        assert procs.run(["true"], cwd=cell / "workspace", env=env_for(cell), timeout_s=30)[0] == 0
    procs.kill_all()
    assert zombie_children() == []


def test_run_timeout_kills_the_tree(cell: Path) -> None:
    """The oracle's path: ProcessTracker.run with a timeout, sandboxed."""
    require_bwrap()
    tag = f"8{uuid.uuid4().int % 10**8:08d}"
    procs = ProcessTracker(f"test-sandbox/{tag}", grace_s=1)
    with sandbox.for_cell("bwrap", cell).applied(procs):
        code, _, timed_out = procs.run(
            ["bash", "-c", background_script(tag)], cwd=cell / "workspace", env=env_for(cell), timeout_s=2
        )
    assert timed_out and code is None
    procs.kill_all()
    assert wait_for(lambda: not host_procs_with(f"600.{tag}"), 3)


def test_the_sandbox_dies_with_a_crashed_harness(cell: Path) -> None:
    """A harness killed with SIGKILL (a crashed xdist worker) takes its cells' sandboxes with it."""
    require_bwrap()
    tag = f"9{uuid.uuid4().int % 10**8:08d}"
    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from pytest_akmbench.system import sandbox\nfrom pytest_akmbench.system.procs import ProcessTracker\n"
        f"cell = Path({str(cell)!r})\nprocs = ProcessTracker('test-sandbox/{tag}')\n"
        "with sandbox.for_cell('bwrap', cell).applied(procs):\n"
        f"    procs.spawn(['bash', '-c', {background_script(tag)!r}], cwd=cell / 'workspace', "
        f"env={env_for(cell)!r})\n"
        "print('ready', flush=True)\ntime.sleep(600)\n"
    )
    harness = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert harness.stdout is not None and harness.stdout.readline().strip() == b"ready"
        assert wait_for(lambda: len(host_procs_with(f"600.{tag}", command=b"sleep\0")) == 6)
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    assert wait_for(lambda: not host_procs_with(f"600.{tag}"), 5), host_procs_with(f"600.{tag}")


# ---------------------------------------------------------------- through the runner


def test_oracle_cell_runs_sandboxed_and_records_it(tmp_path: Path) -> None:
    """The oracle reads its own solution and nothing else; the fingerprint names the sandbox."""
    require_bwrap()
    tasks, stashes = tmp_path / "corpus" / "tasks", tmp_path / "corpus" / "stashes"
    verify = tasks / "demo" / "peek" / "verify.sh"
    write_task(
        tasks,
        "demo/peek",
        solve=f"(head -c1 '{verify}' >/dev/null 2>&1 && echo READ || echo DENIED) > peek.txt\necho hello > out.txt\n",
    )
    write_stash(stashes, "st")
    task = load_corpus(tasks, stashes).tasks[0]
    results = {}
    for mode in ("bwrap", "none"):
        ctx = RunContext(
            run_id=f"r-{mode}",
            tmp_root=tmp_path / "cells",
            stashes_root=stashes,
            agent=OracleAgent(),
            model=None,
            budget_tokens=1000,
            budget_wall_ms=20000,
            budget_turns=None,
            verify_timeout_s=30,
            keep_runs=True,
            sandbox=mode,
        )
        sample = run_cell(Cell(task, "noakm", 1), ctx, ProcessTracker(f"test-sandbox/{uuid.uuid4().hex}"))
        assert sample["outcome"] == "pass", sample
        assert sample["fingerprint"].get("sandbox") == (None if mode == "none" else "bwrap")
        results[mode] = next((tmp_path / "cells" / f"r-{mode}").glob("cell-*/workspace/peek.txt")).read_text()
    assert results == {"bwrap": "DENIED\n", "none": "READ\n"}


def test_fingerprint_without_sandbox_is_unchanged(tmp_path: Path) -> None:
    """Samples stored before the sandbox existed were unsandboxed: they still count for none."""
    tasks, stashes = tmp_path / "tasks", tmp_path / "stashes"
    write_task(tasks, "demo/a")
    write_stash(stashes, "st")
    task = load_corpus(tasks, stashes).tasks[0]
    base = dict(
        run_id="r",
        tmp_root=tmp_path,
        stashes_root=stashes,
        agent=NopAgent(),
        model=None,
        budget_tokens=1,
        budget_wall_ms=1,
        budget_turns=None,
        verify_timeout_s=1,
    )
    plain = fingerprint(task, "noakm", RunContext(**base), "1")  # type: ignore[arg-type]
    assert "sandbox" not in plain
    boxed = fingerprint(task, "noakm", RunContext(**base, sandbox="bwrap"), "1")  # type: ignore[arg-type]
    assert boxed == {**plain, "sandbox": "bwrap"}


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_snoop_script_without_an_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """The snoop policy's command, run as a tool command would be: every target DENIED in the
    sandbox, every one READ without it (so this test can fail)."""
    if mode == "bwrap":
        require_bwrap()
    project, home = tmp_path / "project", tmp_path / "home"
    tasks, stashes = project / "corpus" / "tasks", project / "corpus" / "stashes"
    write_task(tasks, "demo/peek")
    write_stash(stashes, "st")
    (project / ".akmbench" / "store").mkdir(parents=True)
    (project / ".akmbench" / "store" / "samples.jsonl").write_text("{}\n")
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    cells = tmp_path / "cells" / "run"
    for name in ("cell-me", "cell-other"):
        (cells / name / "workspace").mkdir(parents=True)
    (cells / "cell-other" / "workspace" / "out.txt").write_text("other\n")
    task = load_corpus(tasks, stashes).tasks[0]
    box = sandbox.for_cell(mode, cells / "cell-me")
    out = run_in(box, snoop.command(task, cells / "cell-me"))
    found = snoop.parse(out.stdout)
    assert set(found) == set(snoop.TARGETS), out
    expected = "DENIED" if mode == "bwrap" else "READ"
    assert {t: found[t][0] for t in snoop.TARGETS} == {t: expected for t in snoop.TARGETS}
    if mode == "none":
        sha = hashlib.sha256(task.solution.read_bytes()).hexdigest()[:12]
        assert found["solution"] == found["proc"] == ("READ", "solve.sh", sha)
        assert found["other_cell"][1] == "out.txt" and found["home"][1] == "notes.txt"


def test_within_agrees_with_is_relative_to() -> None:
    """The string test the sandbox's binds use says what Path.is_relative_to says, on the edges
    a prefix test gets wrong (a sibling sharing a prefix, the root, the path itself)."""
    from pytest_akmbench.system.sandbox_paths import within

    paths = [Path(p) for p in ("/", "/a", "/ab", "/a/b", "/a/b/c", "/ab/c", "/b", "/usr/lib/x")]
    for path in paths:
        for roots in ([], *([r] for r in paths), [Path("/ab"), Path("/a/b")], [Path("/usr"), Path("/b")]):
            assert within(path, roots) == any(path.is_relative_to(r) for r in roots), (path, roots)


def test_a_run_dir_inside_a_read_only_path_stays_writable(cell: Path) -> None:
    """A cell's run dir nested in a path exposed read-only (a --bench-tmp under an exposed
    project, a bench_sandbox_ro entry above the cells): the read-only bind goes first, so it
    cannot cover the run dir's read-write one; the rest of that path stays read-only."""
    require_bwrap()
    cells = cell.parent
    box = sandbox.for_cell("bwrap", cell, extra=[cells])
    out = run_in(box, "echo hi > out.txt && cat out.txt")
    assert (out.returncode, out.stdout) == (0, "hi\n"), out.stderr
    assert (cell / "workspace" / "out.txt").read_text() == "hi\n"
    assert readable(box, cells / "cell-other" / "workspace" / "notes.txt")  # exposed, so visible
    denied = run_in(box, f"echo x > '{cells / 'cell-other' / 'workspace' / 'notes.txt'}'")
    assert denied.returncode != 0
    assert (cells / "cell-other" / "workspace" / "notes.txt").read_text() == "another cell\n"
