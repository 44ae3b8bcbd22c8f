"""Tests for pytest_akmbench.cell.shell and akm_calls.calls: what an agent's bash command really runs."""

from __future__ import annotations

import pytest

from pytest_akmbench.cell.akm_calls import calls
from pytest_akmbench.cell.shell import commands, writes_files


def words(script: str) -> list[list[str]]:
    return [c.words for c in commands(script)]


def akm_calls(script: str) -> list[tuple[str, str | None]]:
    return [(c.verb, c.query if c.verb == "search" else c.ref) for c in calls(script)]


class TestCommands:
    @pytest.mark.parametrize(
        ("script", "expected"),
        [
            ("akm search 'a b' && akm show skill:x", [["akm", "search", "a b"], ["akm", "show", "skill:x"]]),
            ("a; b | c || d & e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
            ("( cd ws && make )", [["cd", "ws"], ["make"]]),
            ("FOO=1 BAR=2 env -i X=3 timeout -s KILL 30 nohup akm index", [["akm", "index"]]),
            ("if true; then akm search c; fi", [["true"], ["akm", "search", "c"], ["fi"]]),
            ("x # akm search commented", [["x"]]),
            ('echo "a\\"b $(akm show skill:y)"', [["echo", 'a"b $(akm show skill:y)'], ["akm", "show", "skill:y"]]),
            ("x=`akm search b`", [["akm", "search", "b"]]),
            (
                "echo `akm show skill:a` and `akm search z`",
                [
                    ["echo", "`akm show skill:a`", "and", "`akm search z`"],
                    ["akm", "show", "skill:a"],
                    ["akm", "search", "z"],
                ],
            ),
            ('echo "got `akm search q`" next', [["echo", "got `akm search q`", "next"], ["akm", "search", "q"]]),
            ("echo `akm search open", [["echo", "`akm search open"], ["akm", "search", "open"]]),
            (
                'echo $(echo "$(akm search deep)")',
                [["echo", '$(echo "$(akm search deep)")'], ["echo", "$(akm search deep)"], ["akm", "search", "deep"]],
            ),
            ("line \\\ncontinued", [["line", "continued"]]),
        ],
    )
    def test_simple_commands(self, script: str, expected: list[list[str]]) -> None:
        """Separators, subshells, wrappers, keywords, comments and substitutions as a shell runs them."""
        assert words(script) == expected

    def test_shells_run_their_scripts(self) -> None:
        """bash -c, bash -lc, sh -c, eval and a heredoc given to a shell are followed."""
        assert words("bash -c 'akm search q; akm show k:y'") == [["akm", "search", "q"], ["akm", "show", "k:y"]]
        assert words("bash -lc \"akm search 'a b'\"") == [["akm", "search", "a b"]]
        assert words("sh -ec 'akm index'") == [["akm", "index"]]
        assert words("eval 'akm show skill:e'") == [["akm", "show", "skill:e"]]
        assert words("bash <<EOF\nakm search inside\nEOF\necho after") == [
            ["akm", "search", "inside"],
            ["echo", "after"],
        ]
        assert words("cat <<-EOF | bash\n\takm search piped\n\tEOF") == [["cat"], ["akm", "search", "piped"]]
        assert words("bash script.sh") == [["bash", "script.sh"]]  # its text is not in the command

    def test_heredoc_bodies_for_other_programs_are_text(self) -> None:
        """A heredoc written to a file or fed to python is data, not commands."""
        assert words("cat <<'EOF' > NOTES.md\nakm search q\nEOF\necho done") == [["cat"], ["echo", "done"]]
        assert words("python3 - <<EOF\nprint('akm search q')\nEOF") == [["python3", "-"]]
        assert words("cat <<EOF\nnever closed akm search q") == [["cat"]]

    def test_quoted_text_is_not_a_command(self) -> None:
        """An echoed string that mentions akm is one word of echo."""
        assert words('echo "line one\\nakm search q"') == [["echo", "line one\\nakm search q"]]
        assert words("grep 'akm show' notes.md") == [["grep", "akm show", "notes.md"]]

    def test_unbalanced_quotes_do_not_raise(self) -> None:
        """A broken command still yields its words."""
        assert words('akm search "unbalanced') == [["akm", "search", "unbalanced"]]
        assert words("echo 'open") == [["echo", "open"]]

    def test_redirections(self) -> None:
        """Redirections are recorded with their targets; descriptor duplications are not files."""
        (c,) = commands("ls -la > out.txt 2>&1 </dev/null")
        assert c.words == ["ls", "-la"] and c.redirects == [(">", "out.txt"), ("<", "/dev/null")]
        assert commands("echo hi>out.txt")[0].redirects == [(">", "out.txt")]
        assert commands("cmd &>> all.log")[0].redirects == [("&>>", "all.log")]


class TestAkmCalls:
    def test_what_akm_received(self) -> None:
        """Verb, first positional as query or ref, flags; options with values are skipped."""
        assert akm_calls("akm search --limit 5 --type skill 'a b' extra") == [("search", "a b")]
        assert akm_calls("akm search docker healthcheck") == [("search", "docker")]  # unquoted: first word
        assert akm_calls("akm --format=json show skills/x#usage") == [("show", "skills/x#usage")]
        assert akm_calls("akm feedback k:y --negative --reason 'too old' --tag a") == [("feedback", "k:y")]
        assert calls("akm feedback k:y --negative")[0].polarity == "negative"
        assert calls("akm feedback k:y --positive --note x")[0].polarity == "positive"
        assert calls("akm feedback k:y")[0].polarity is None
        assert akm_calls("akm index && akm") == [("index", None)]
        assert akm_calls("akm search -- -dash") == [("search", "-dash")]

    @pytest.mark.parametrize(
        "script",
        [
            "/usr/local/bin/akm search q",
            "npx akm search q",
            "npx -y akm-cli@0.9.0 search q",
            "bunx akm-cli search q",
            "bun x akm search q",
            "timeout 30 akm search q",
            "bash -lc 'akm search q'",
            "sh -c 'env A=1 akm search q'",
            "out=$(akm search q)",
            "nice -n 5 akm search q",
            "ionice -c 3 akm search q",
            "env --chdir /ws akm search q",
            "timeout --kill-after 5 30 akm search q",
            'out=$(")"; akm search q)',
            "command akm search q",
            "exec akm search q",
        ],
    )
    def test_every_way_to_run_akm(self, script: str) -> None:
        """Paths, npm runners, wrappers and shells all reach the same akm call."""
        assert akm_calls(script) == [("search", "q")]

    @pytest.mark.parametrize(
        "script",
        [
            "echo akm search q",
            "grep akm README.md",
            "cat <<'EOF' > n.md\nakm search q\nEOF",
            "npx other-tool search q",
            "akmx search q",
            "# akm search q",
        ],
    )
    def test_mentions_are_not_calls(self, script: str) -> None:
        """Text that only mentions akm is no call."""
        assert calls(script) == []


class TestWritesFiles:
    @pytest.mark.parametrize(
        ("command", "writes"),
        [
            ("echo hi > out.txt", True),
            ("printf x >>log.txt", True),
            ("cat <<'EOF' > cfg.yaml\na: 1\nEOF", True),
            ("sed -i 's/a/b/' f.txt", True),
            ("mkdir -p build && touch build/x", True),
            ("bash <<'EOF'\nset -eu\necho hi > out.txt\nEOF", True),
            ("git checkout -- f.py", True),
            ("cat a | tee log", True),
            ("> out.txt", True),
            ("LANG=C >>log.txt", True),
            ("cat README.md", False),
            ("ls -la 2>&1", False),
            ("akm search 'x' > /dev/null 2>&1", False),
            ("grep -r foo . > /tmp/found.txt", False),
            ("python -c 'print(1)'", False),
            ("echo 'a > b'", False),
        ],
    )
    def test_bash_write_detection(self, command: str, writes: bool) -> None:
        """Redirections and file-changing commands count; reads, quoted text, /dev and /tmp do not."""
        assert writes_files(command) is writes
