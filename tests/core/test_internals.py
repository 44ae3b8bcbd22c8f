"""What plugin/internals.py relies on in pytest and pytest-xdist, checked directly against the
installed releases: a release that renames, re-signs or changes one fails here, by name, before
a bench run misbehaves (docs/architecture.md, "pytest and xdist internals")."""

from __future__ import annotations

import inspect
import queue
import re
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from packaging.requirements import Requirement
from xdist import dsession, workermanage
from xdist.scheduler import LoadScheduling, LoadScopeScheduling

from pytest_akmbench.plugin import internals

ROOT = Path(__file__).resolve().parents[2]


def _params(func: Any) -> list[str]:
    return [p for p in inspect.signature(func).parameters if p != "self"]


def test_the_pins_admit_the_installed_releases() -> None:
    """pyproject.toml bounds pytest and pytest-xdist above; the releases these tests ran on are inside."""
    text = (ROOT / "pyproject.toml").read_text().split("\ndependencies = [", 1)[1].split("\n]", 1)[0]
    deps = {r.name: r for r in (Requirement(d) for d in re.findall(r'^\s+"([^"]+)",', text, re.M))}
    for name in ("pytest", "pytest-xdist"):
        assert any(spec.operator == "<" for spec in deps[name].specifier), f"{name} has no upper pin"
        assert version(name) in deps[name].specifier, f"{name} {version(name)} is outside {deps[name]}"


# ------------------------------------------------------------------ -k and -m


def test_expressions_compile_and_call_the_matcher_with_keyword_arguments() -> None:
    calls: list[tuple[str, dict[str, object]]] = []

    def matcher(ident: str, /, **kwargs: object) -> bool:
        calls.append((ident, kwargs))
        return ident == "akm"

    assert internals.compile_expression("akm and not noakm").evaluate(matcher)
    assert not internals.compile_expression("noakm or s2").evaluate(matcher)
    internals.compile_expression("cell(arm='akm', seed=2)").evaluate(matcher)
    assert ("cell", {"arm": "akm", "seed": 2}) in calls


def test_a_bad_expression_is_a_syntax_error_with_its_column() -> None:
    with pytest.raises(SyntaxError) as err:
        internals.compile_expression("akm and")
    assert isinstance(err.value.offset, int) and err.value.msg


def test_pytest_keyword_matching_of_an_item(pytester: pytest.Pytester) -> None:
    item = pytester.getitem("def test_func(): pass")
    matches = internals.keyword_matcher(item)
    assert matches("func") and matches("FUNC") and not matches("other")


def test_pytest_mark_matching_with_arguments() -> None:
    matches = internals.mark_matcher([pytest.mark.cell(task="t", arm="akm", seed=1).mark])
    assert matches("cell") and matches("cell", arm="akm") and matches("cell", arm="akm", seed=1)
    assert not matches("cell", arm="noakm") and not matches("other")


def test_a_mark_made_directly_is_the_decorator_calls_mark() -> None:
    kwargs = {"task": "d/t", "arm": "akm", "seed": 2, "domain": "d", "slice": "train"}
    made = internals.mark("cell", dict(kwargs))
    assert made == pytest.mark.cell(**kwargs)
    assert list(made.mark.kwargs) == list(kwargs) and made.name == "cell" and made.args == ()


# ------------------------------------------------------------------ a cell's failure report


def test_pytest_reports_failures_through_the_two_methods_replaced() -> None:
    assert _params(pytest.Function.repr_failure) == ["excinfo"]
    assert _params(pytest.Function._repr_failure_py) == ["excinfo", "style"]
    assert "fixtureinfo" in _params(pytest.Function.__init__)


CONFTEST = """
import pytest
from pytest_akmbench.plugin import internals

class Item(internals.ReprFunction):
    def cell_repr(self, excinfo):
        text = str(excinfo.value)
        if text.startswith("in "):
            body = self.config.getoption("tbstyle", "auto") != "line"
            return internals.failure_repr("where.yaml", "custom: " + text, ["tail line"], body)
        return None

@pytest.fixture
def broken():
    raise RuntimeError("in setup")

def pytest_pycollect_makeitem(collector, name, obj):
    if name.startswith("test_"):
        first = Item.from_parent(collector, name=name, callobj=obj)
        again = Item.from_parent(collector, name=name + "_again", callobj=obj, fixtureinfo=internals.fixture_info(first))
        return [first, again]
"""


def test_a_failure_in_setup_and_in_the_call_shows_the_replaced_text(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "def test_setup(broken): pass\n"
        "def test_call(): raise RuntimeError('in call')\n"
        "def test_other(): raise ValueError('plain')\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rf", "-rE")
    result.assert_outcomes(failed=4, errors=2)
    out = result.stdout.str()
    assert out.count("where.yaml:1: custom: in setup") >= 2 and out.count("where.yaml:1: custom: in call") >= 2
    assert "tail line" in out and "ValueError: plain" in out
    line = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--tb=line")
    assert "tail line" not in line.stdout.str() and "where.yaml:1: custom: in call" in line.stdout.str()


# ------------------------------------------------------------------ rootdir and ini file


def test_pytest_decides_and_takes_a_replaced_setup(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    other = pytester.mkdir("other")
    (other / "tox.ini").write_text("[pytest]\naddopts = -q\n")
    (other / "test_x.py").write_text("")
    ns, unknown = internals.parse_known_and_unknown(config, [str(other / "test_x.py"), "--no-such-flag"])
    assert unknown == ["--no-such-flag"]
    rootpath, inipath, inicfg, ignored = internals.decide_setup(config, ns, unknown)
    assert (rootpath, inipath) == (other, other / "tox.ini") and isinstance(ignored, list)
    assert config.getini("addopts") == []  # read once: replace_setup must clear pytest's cache
    internals.replace_setup(config, rootpath, inipath, inicfg, ignored)
    assert (config.rootpath, config.inipath, config.getini("addopts")) == (other, other / "tox.ini", ["-q"])
    assert internals.parse_known(config, ["--confcutdir", str(other)]).confcutdir == str(other)


# ------------------------------------------------------------------ xdist


class Node:
    """What xdist's schedulers use of a worker controller."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduled(pytester: pytest.Pytester, make: Any, ids: list[str]) -> tuple[Any, list[Node]]:
    config = pytester.parseconfig("-p", "xdist", "--tx", "2*popen")
    sched = make(config)
    nodes = [Node("gw0"), Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    return sched, nodes


def test_the_scope_scheduler_keeps_a_unit_on_one_worker(pytester: pytest.Pytester) -> None:
    assert _params(LoadScopeScheduling._split_scope) == ["nodeid"]
    ids = [f"d/t{i}.yaml::{'chain' if i % 2 else 'free'}-{i}" for i in range(8)]
    sched, nodes = _scheduled(
        pytester, lambda c: internals.scope_scheduler(c, None, lambda n: "chain" if "chain" in n else n), ids
    )
    chain = {i for i, nodeid in enumerate(ids) if "chain" in nodeid}
    assert sum(1 for node in nodes if chain & set(node.sent)) == 1
    assert sched._split_scope(ids[1]) == "chain"


def test_the_round_scheduler_holds_two_cells_per_worker(pytester: pytest.Pytester) -> None:
    assert _params(LoadScheduling._send_tests) == ["node", "num"]
    assert _params(LoadScheduling.check_schedule) == ["node", "duration"]
    ids = [f"t.yaml::akm-s{i}" for i in range(40)]
    sched, nodes = _scheduled(pytester, lambda c: internals.round_scheduler(c, None, 2), ids)
    assert [node.sent for node in nodes] == [[0, 1], [2, 3]]  # without maxschedchunk: 5 each
    sched.mark_test_complete(nodes[0], 0)  # calls check_schedule: one more to hold two
    assert nodes[0].sent == [0, 1, 4] and sched.node2pending[nodes[0]] == [1, 4]
    sched.pending.clear()
    sched.mark_test_complete(nodes[1], 2)
    assert nodes[1].shutting_down


def test_xdist_looks_make_reltoroot_up_when_it_sets_a_worker_up() -> None:
    assert _params(workermanage.make_reltoroot) == ["roots", "args"]
    assert "make_reltoroot" in workermanage.WorkerController.setup.__code__.co_names
    original = workermanage.make_reltoroot
    restore = internals.keep_remote_args()
    try:
        assert workermanage.make_reltoroot([Path("/elsewhere")], ["a/b.py", "-k", "x"]) == ["a/b.py", "-k", "x"]
    finally:
        restore()
    assert workermanage.make_reltoroot is original


def test_the_controller_reads_worker_events_from_the_dsession_queue(pytester: pytest.Pytester) -> None:
    for event, params in {
        "testreport": ["node", "rep"],
        "workerfinished": ["node"],
        "errordown": ["node", "error"],
    }.items():
        assert _params(getattr(dsession.DSession, "worker_" + event)) == params
    pytester.makeconftest(
        "from pathlib import Path\n"
        "from pytest_akmbench.plugin import internals\n"
        "def pytest_sessionfinish(session):\n"
        "    if not hasattr(session.config, 'workerinput'):\n"
        "        events = internals.controller_events(session.config)\n"
        "        Path('events.txt').write_text(type(events).__name__)\n"
    )
    pytester.makepyfile("def test_one(): pass")
    pytester.runpytest_subprocess("-p", "xdist", "-n", "1", "-p", "no:randomly").assert_outcomes(passed=1)
    assert (pytester.path / "events.txt").read_text() == "Queue"
    assert isinstance(dsession.DSession(pytester.parseconfig("-p", "xdist")).queue, queue.Queue)


def test_the_status_line_is_said_once() -> None:
    lines: list[str] = []
    terminal = SimpleNamespace(isatty=False, hasmarkup=False, write_line=lines.append)
    plugins: dict[str, Any] = {"terminalreporter": terminal}
    manager = SimpleNamespace(getplugin=plugins.get, get_plugin=plugins.get)
    config: Any = SimpleNamespace(pluginmanager=manager, option=SimpleNamespace(verbose=-1))
    plugins["terminaldistreporter"] = reporter = dsession.TerminalDistReporter(config)
    spec = SimpleNamespace(id="gw0")
    internals.status_once(config)
    reporter.pytest_xdist_setupnodes([spec])
    reporter.pytest_xdist_setupnodes([spec])
    assert lines == ["bringing up nodes..."]
