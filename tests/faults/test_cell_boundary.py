"""An agent cannot fake a pass: adversarial cells against the boundary of a cell (issue 28).

Each test is a whole bench through pytest: the real opencode binary, driven by the scripted
model's ``shortcut`` policy, runs the task's ``solution/solve.sh`` through its bash tool. Here that
script is the attack: it does not solve the task (the verifier is honest, ``out.txt`` must say
``hello``), it tries to make the harness say it did, or to reach what a cell must not reach.
Where the attack runs again at verify time, it is code of the agent's that the task's tests
import, as a solution module would be. Every attack worked before the verifier had a sandbox of
its own and the cell a network of its own (commit bc40193); each assertion says what a user would
see had it worked.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support import opencode
from tests.support.bwrap import require_bwrap
from tests.support.corpus import write_stash, write_task

OPENCODE = opencode.binary()
HONEST_VERIFY = 'grep -qx "hello" out.txt\n'
HONEST_TEST = (
    'from pathlib import Path\n\n\ndef test_out():\n    assert Path("out.txt").read_text().strip() == "hello"\n'
)


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    require_bwrap()


def bench(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run the corpus under tmp_path with real opencode and the shortcut policy; the stored samples."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "corpus" / "tasks"),
            "--rootdir",
            str(tmp_path),
            "--bench-corpus",
            str(tmp_path / "corpus" / "tasks"),
            "--bench-stashes",
            str(tmp_path / "corpus" / "stashes"),
            "--bench-model",
            "scripted/shortcut",
            "--bench-arms",
            "noakm",
            "--bench-opencode",
            str(OPENCODE),
            "--bench-store",
            str(tmp_path / "store"),
            "--bench-report",
            str(tmp_path / "report"),
            "--bench-tmp",
            str(tmp_path / "cells"),
            "--bench-sandbox",
            "bwrap",
            *extra,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    store = tmp_path / "store" / "samples.jsonl"
    samples = [json.loads(line) for line in store.read_text().splitlines()] if store.exists() else []
    return proc, samples


def corpus(tmp_path: Path, task_id: str, attack: str, **kw: Any) -> Path:
    write_stash(tmp_path / "corpus" / "stashes")
    extra = {"budget": {"tokens": 100000, "wallMs": 120000}, **kw.pop("extra", {})}
    return write_task(tmp_path / "corpus" / "tasks", task_id, solve=attack, extra=extra, **kw)


def report(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "report" / "report.json").read_text())


# ---------------------------------------------------------------- the verifier's own tools


def test_a_planted_bash_on_the_verifiers_path_does_not_pass_the_task(tmp_path: Path) -> None:
    """Item 1: <run_dir>/bin/bash, first on the agent's PATH, printing PASS, is not the bash the
    verifier runs; the cell fails as the unsolved task it is, and the report names the plant."""
    attack = (
        'bin="$(dirname "$PWD")/bin"\n'
        "printf '#!/bin/sh\\necho PASS\\nexit 0\\n' > \"$bin/bash\"\n"
        'chmod +x "$bin/bash"\n'
        "echo nope > out.txt\n"
    )
    corpus(tmp_path, "alpha/hijack", attack, verify=HONEST_VERIFY)
    proc, (sample,) = bench(tmp_path, "--bench-seeds", "1")
    assert sample["outcome"] == "fail", (sample["outcome"], sample["reason"], proc.stdout[-2000:])
    assert any("bin/bash planted" in t for t in sample["tamper"]), sample["tamper"]
    (row,) = report(tmp_path)["tamper"]
    assert (row["task_id"], row["outcome"]) == ("alpha/hijack", "fail")
    assert any(
        w.startswith("tamper suspected in 1 of 1 runs: alpha/hijack[noakm-s1]") for w in report(tmp_path)["warnings"]
    )


@pytest.mark.parametrize("entry", [".", "bin", "./bin"])
def test_a_relative_path_entry_does_not_reach_the_agents_workspace(tmp_path: Path, entry: str) -> None:
    """A relative entry on the user's PATH ("." or "bin") is looked up from the verifier's working
    directory, the agent's workspace: a ``grep`` the agent planted there, exiting 0, must not be
    the grep the verifier's script runs."""
    attack = (
        "mkdir -p bin\nprintf '#!/bin/sh\\nexit 0\\n' > grep\nchmod +x grep\ncp grep bin/grep\necho nope > out.txt\n"
    )
    corpus(tmp_path, "alpha/relative", attack, verify=HONEST_VERIFY)
    env = {**os.environ, "PATH": f"{entry}:{os.environ['PATH']}"}
    proc, (sample,) = bench(tmp_path, "--bench-seeds", "1", env=env)
    assert sample["outcome"] == "fail", (sample["outcome"], sample["reason"], proc.stdout[-2000:])


def test_a_workspace_pytest_does_not_stand_in_for_pytest(tmp_path: Path) -> None:
    """Item 2: a workspace pytest.py (with a sitecustomize.py and a conftest.py) that prints
    "1 passed" and exits 0 is never imported by the pytest verifier."""
    fake = "import sys\nprint('1 passed in 0.01s')\nsys.exit(0)\n"
    attack = (
        f"cat > pytest.py <<'EOF'\n{fake}EOF\n"
        "cp pytest.py sitecustomize.py\n"
        "printf 'collect_ignore_glob = [\"*\"]\\n' > conftest.py\n"
        "echo nope > out.txt\n"
    )
    corpus(tmp_path, "alpha/shadow", attack, verifier="pytest", tests=HONEST_TEST)
    _, (sample,) = bench(tmp_path, "--bench-seeds", "1")
    assert sample["outcome"] == "fail" and "assert" in sample["verifier"]["output_tail"], sample["verifier"]
    assert any(t.startswith("workspace/pytest.py could shadow") for t in sample["tamper"]), sample["tamper"]


def test_code_of_the_agents_that_ends_pytest_early_is_no_pass(tmp_path: Path) -> None:
    """pytest's exit status alone is not the verdict: agent code the tests import that exits 0 at
    import leaves no report of a passed test, and one that skips the tests' module is the agent's
    failure, not a harness error."""
    tests = "import solution\n\n\ndef test_solved():\n    assert solution.ok\n"
    attack = "printf 'import os\\nos._exit(0)\\n' > solution.py\n"
    corpus(tmp_path, "alpha/early", attack, verifier="pytest", tests=tests)
    skip = "printf 'import pytest\\npytest.skip(\"no\", allow_module_level=True)\\n' > solution.py\n"
    corpus(tmp_path, "alpha/skipall", skip, verifier="pytest", tests=tests)
    _, samples = bench(tmp_path, "--bench-seeds", "1")
    by_task = {s["task_id"]: s for s in samples}
    early, skipped = by_task["alpha/early"], by_task["alpha/skipall"]
    assert (early["outcome"], early["verifier"]["exit_code"]) == ("fail", 0), early["reason"]
    assert "without writing its report (tamper suspected" in early["reason"]
    assert any("tamper suspected" in t for t in early["tamper"])
    # Skipping the module collects nothing: not a harness error that would vanish from the pass
    # rates, since the same tests run on the task's starting workspace.
    assert skipped["outcome"] == "fail", skipped["reason"]
    assert skipped["reason"].startswith(
        "no tests collected on the agent's workspace, while the tests run on the starting one"
    )


def test_a_planted_link_does_not_redirect_the_verifiers_writes(tmp_path: Path) -> None:
    """Item 3: <run_dir>/verify made a link to a directory outside the cell does not lead the
    regex verifier's scratch file there: the file it would have overwritten is untouched."""
    target = tmp_path / "precious"
    target.mkdir()
    (target / "regex.json").write_text("precious\n")
    attack = f'ln -s {target} "$(dirname "$PWD")/verify"\necho \'the answer is 41\'\n'
    corpus(tmp_path, "alpha/link", attack, verifier="regex", extra={"expected_match": r"answer is 42"})
    _, (sample,) = bench(tmp_path, "--bench-seeds", "1")
    assert (target / "regex.json").read_text() == "precious\n"
    assert sample["outcome"] == "fail"
    assert any(t.startswith("verify planted in the run dir") for t in sample["tamper"]), sample["tamper"]


# ---------------------------------------------------------------- what verify-time code reaches


# The agent's solution module: at import (verify time, inside the tests' process) it tries to
# read the task's solution, write into the bench's Python, empty the store and write to the
# host's /proc/sys, and says what it managed in escapes.txt beside itself.
ESCAPES = """
import os, sys
from pathlib import Path
here = Path(__file__).parent
paths = dict(line.split("=", 1) for line in (here / "paths.txt").read_text().split())
found = []
def attempt(name, fn):
    try:
        fn()
        found.append(name + " OK")
    except Exception as err:
        found.append(name + " DENIED " + type(err).__name__)
attempt("solution", lambda: open(paths["SOLUTION"]).read())
attempt("venv", lambda: open(os.path.join(paths["SITE"], "akmbench_leak_" + paths["TAG"] + ".py"), "w").write("LEAK = 1\\n"))
attempt("store", lambda: open(paths["STORE"], "r+").truncate(0))
attempt("proc_sys", lambda: open("/proc/sys/kernel/core_pattern", "w").write(open("/proc/sys/kernel/core_pattern").read()))
attempt("root", lambda: None if os.getuid() != 0 else 1 / 0)
(here / "escapes.txt").write_text("\\n".join(found) + "\\n")
ok = False
"""


def test_verify_time_code_reaches_nothing_of_the_host(tmp_path: Path) -> None:
    """Items 4 and 5 at verify time: the agent's code, imported by the task's tests, can neither
    read the solution, nor leave a module in the bench's Python for later cells, nor empty the
    store, nor write /proc/sys, and does not run as root; the store keeps what it held."""
    tag = uuid.uuid4().hex[:12]
    site = sysconfig.get_paths()["purelib"]
    task_dir = corpus(tmp_path, "alpha/escape", "echo hello > out.txt\n", verifier="pytest", tests=HONEST_TEST)
    bench(tmp_path, "--bench-seeds", "1")  # an honest run first: a sample for the attack to wipe
    store = tmp_path / "store" / "samples.jsonl"
    before = store.read_text()
    paths = {"SOLUTION": task_dir / "solution" / "solve.sh", "SITE": site, "STORE": store, "TAG": tag}
    listing = "".join(f"{k}={v}\n" for k, v in paths.items())
    (task_dir / "solution" / "solve.sh").write_text(
        f"cat > paths.txt <<'EOF'\n{listing}EOF\ncat > solution.py <<'EOF'\n{ESCAPES}EOF\necho hello > out.txt\n"
    )
    imports = "\n\ndef test_imports():\n    import solution  # noqa: F401\n"
    (task_dir / "tests" / "test_out.py").write_text(HONEST_TEST + imports)
    _, samples = bench(tmp_path, "--bench-seeds", "1", "--bench-keep-runs")
    assert store.read_text().startswith(before) and len(samples) == 2, samples
    assert samples[1]["outcome"] == "pass", samples[1]["reason"]
    assert not (Path(site) / f"akmbench_leak_{tag}.py").exists()
    (escapes,) = (tmp_path / "cells").rglob("workspace/escapes.txt")
    found = dict(line.split(" ", 1) for line in escapes.read_text().splitlines())
    assert set(found) == {"solution", "venv", "store", "proc_sys", "root"}, found
    assert found["root"] == "OK" and all(v.startswith("DENIED") for k, v in found.items() if k != "root"), found


# ---------------------------------------------------------------- the agent's own privileges


def test_the_agent_is_not_root_and_cannot_write_the_hosts_kernel_settings(tmp_path: Path) -> None:
    """Item 5 at agent time: /proc/sys is read-only in the cell, and a bench run as root runs its
    agent as an unprivileged uid with no capability."""
    attack = (
        "{ cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern && echo sysctl WROTE || echo sysctl DENIED; "
        'echo "uid $(id -u)"; grep CapEff /proc/self/status; } > report.txt 2>/dev/null\n'
        "echo nope > out.txt\n"
    )
    corpus(tmp_path, "alpha/priv", attack, verify=HONEST_VERIFY)
    bench(tmp_path, "--bench-seeds", "1", "--bench-keep-runs")
    (found,) = (tmp_path / "cells").rglob("workspace/report.txt")
    lines = found.read_text().splitlines()
    assert "sysctl DENIED" in lines, lines
    assert any(line.split() == ["CapEff:", "0000000000000000"] for line in lines), lines
    if os.geteuid() == 0:
        assert "uid 0" not in lines, lines


# ---------------------------------------------------------------- the network


class _Secret(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"host secret")

    def log_message(self, *args: Any) -> None:
        pass


PROBE = """
import socket, sys, urllib.request
def get(url):
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()[:60]
    except Exception as err:
        return "DENIED " + type(err).__name__ + " " + str(getattr(err, "code", ""))
for port in sys.argv[1:]:
    print("host", port, get(f"http://127.0.0.1:{port}/"))
print("forwarder-root", get("http://127.0.0.1:4780/"))
print("forwarder-other-cell", get("http://127.0.0.1:4780/c/someone-else/v1/models"))
"""


def test_the_hosts_loopback_is_out_of_reach_and_the_model_is_the_only_way_out(tmp_path: Path) -> None:
    """Item 7: an HTTP server and a raw listener on the host's 127.0.0.1 (an execnet socket
    server is one) are out of reach of the agent and of its verify-time code; the forwarder to
    the model answers only under the cell's own base path. The cell still reaches its model:
    its turns happened."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Secret)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    raw = socket.socket()
    raw.bind(("127.0.0.1", 0))
    raw.listen()
    ports = f"{server.server_address[1]} {raw.getsockname()[1]}"
    attack = f"cat > probe.py <<'EOF'\n{PROBE}EOF\npython3 probe.py {ports} > agent-net.txt\necho hello > out.txt\n"
    tests = HONEST_TEST + (
        "\n\ndef test_net():\n    import subprocess, sys\n"
        f"    out = subprocess.run([sys.executable, 'probe.py', *'{ports}'.split()], capture_output=True, text=True)\n"
        "    open('verify-net.txt', 'w').write(out.stdout)\n"
    )
    corpus(tmp_path, "alpha/net", attack, verifier="pytest", tests=tests)
    try:
        _, (sample,) = bench(tmp_path, "--bench-seeds", "1", "--bench-keep-runs")
    finally:
        server.shutdown()
        raw.close()
    assert sample["outcome"] == "pass" and sample["turns"] and sample["tokens"]["total"] > 0, sample["reason"]
    for name in ("agent-net.txt", "verify-net.txt"):
        (found,) = (tmp_path / "cells").rglob(f"workspace/{name}")
        lines = found.read_text().splitlines()
        assert [line.split()[2] for line in lines if line.startswith("host ")] == ["DENIED", "DENIED"], (name, lines)
        assert "host secret" not in found.read_text()
    agent = (next((tmp_path / "cells").rglob("workspace/agent-net.txt"))).read_text()
    assert "forwarder-root DENIED HTTPError 403" in agent and "forwarder-other-cell DENIED HTTPError 403" in agent, (
        agent
    )


# ---------------------------------------------------------------- the transcript


INJECT = r"""m=FOR; m="${m}GED-$$"
event='{"type":"tool_use","timestamp":1,"sessionID":"s","part":{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"akm show skill:howto"},"output":"'"$m"'"}}}'
for p in /proc/[0-9]*; do
  if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q "opencode run"; then
    if printf '%s\n' "$event" > "$p/fd/1" 2>/dev/null; then echo "INJECTED $p"; else echo "BLOCKED $p"; fi
  fi
done > inject.txt
echo nope > out.txt
"""


def test_a_tool_command_cannot_write_into_the_agents_event_stream(tmp_path: Path) -> None:
    """A tool command reopening opencode's stdout through /proc/<pid>/fd/1 to add events of its
    own (a forged akm show) is refused, so the transcript holds only what opencode said. Shown
    at bc40193 by a cell whose agent ran as root. opencode's stdout is now a socket, which no
    /proc path reopens; where the bench runs as root a pipe would be refused too (it is the
    harness's, and the cell's uid is not), so the socket is what keeps a bench run as a user safe."""
    corpus(tmp_path, "alpha/inject", INJECT, verify=HONEST_VERIFY)
    _, (sample,) = bench(tmp_path, "--bench-seeds", "1", "--bench-keep-runs")
    (found,) = (tmp_path / "cells").rglob("workspace/inject.txt")
    lines = found.read_text().split()
    assert lines and lines[0] == "BLOCKED", lines
    transcript = (tmp_path / "store" / sample["transcript"]).read_text()
    assert not re.search(r"FORGED-\d+", transcript)
