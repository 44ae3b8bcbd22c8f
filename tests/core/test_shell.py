"""Tests for pytest_akmbench.cell.shell and akm_calls.calls: what an agent's bash command really runs."""

from __future__ import annotations

import shlex

import pytest

from pytest_akmbench.cell.akm_calls import calls
from pytest_akmbench.cell.shell import Command, commands, writes_files


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
            ("\\akm search q", [["akm", "search", "q"]]),  # a backslash only bypasses an alias
            ("# odd\nakm search q", [["akm", "search", "q"]]),  # a comment ends at its line
            ("echo 'a' 'b'", [["echo", "a", "b"]]),
            ("echo '' done", [["echo", "", "done"]]),
            ("akm search hello\\ world", [["akm", "search", "hello world"]]),
            ('echo "\\X"', [["echo", "\\X"]]),  # inside double quotes, a backslash before X stays
            ("x=``; akm search q", [["akm", "search", "q"]]),
            ("eval akm search q", [["akm", "search", "q"]]),
            ("bash", [["bash"]]),
            ("eval", [["eval"]]),
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

    @pytest.mark.parametrize("script", ["nohup", "timeout 5", "env A=1", "npx -y", "bash -c", "bash <<EOF", "FOO=1"])
    def test_wrappers_and_shells_with_nothing_to_run_run_nothing(self, script: str) -> None:
        """A wrapper, an assignment or a shell given no command runs none (and reading it raises nothing)."""
        assert words(script) == []

    def test_nesting_is_followed_eight_levels_deep(self) -> None:
        """Scripts inside scripts (bash -c, eval, $(...)) are followed down to 8 levels, no further, so a
        runaway nesting cannot recurse without end."""

        def bash_c(depth: int) -> str:
            script = "akm search q"
            for _ in range(depth):
                script = "bash -c " + shlex.quote(script)
            return script

        def substituted(depth: int) -> str:
            script = "akm search q"
            for _ in range(depth):
                script = f"echo $({script})"
            return script

        for nested in (bash_c, lambda d: "eval " * d + "akm search q", substituted):
            assert akm_calls(nested(8)) == [("search", "q")]
            assert akm_calls(nested(9)) == []

    def test_heredocs_reach_the_command_that_reads_them(self) -> None:
        """A heredoc piped from cat feeds the shell after the pipe (`|` or `|&`) and only that one;
        a shell's own heredoc wins over the pipe, as in bash; every line of it runs."""
        assert akm_calls("cat <<EOF |& bash\nakm search q\nEOF") == [("search", "q")]
        assert akm_calls("cat <<X | bash <<Y\nakm search one\nX\nakm search two\nY") == [("search", "two")]
        assert words("cat <<'EOF' > notes.md\nakm search q\nEOF\nbash") == [["cat"], ["bash"]]
        assert akm_calls("bash <<EOF\nakm search a\nakm show b\nEOF") == [("search", "a"), ("show", "b")]

    def test_a_command_keeps_its_heredoc(self) -> None:
        """The body a command reads is kept whole on it, closed or not, with or without words."""
        assert commands("python3 - <<EOF\nprint(1)\nprint(2)\nEOF")[0].heredoc == "print(1)\nprint(2)"
        assert commands("python3 - <<EOF\nprint(1)")[0].heredoc == "print(1)"
        assert commands("python3 - <<EOF\nprint(1)\n")[0].heredoc == "print(1)"
        assert commands("<<EOF > f.txt\nhi\nEOF") == [Command([], [(">", "f.txt")], "hi")]

    @pytest.mark.parametrize("line", ["  EOF", "XEOF", "EOF "])
    def test_a_heredoc_ends_only_at_its_delimiter(self, line: str) -> None:
        """A line that only resembles the delimiter is part of the text, not the end of it."""
        assert calls(f"cat <<EOF > n.md\n{line}\nakm search q\nEOF") == []

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
        assert words('echo "abc\\') == [["echo", "abc\\"]]
        assert words('echo "a\\"') == [["echo", 'a"']]
        assert akm_calls("echo $(akm search q") == [("search", "q")]
        assert akm_calls("x=$(akm search 'unclosed") == [("search", "unclosed")]

    @pytest.mark.parametrize(
        ("script", "inside"),
        [
            ("out=$(akm search 'x)y')", [["akm", "search", "x)y"]]),
            ("out=$(akm search ''; akm show k:z)", [["akm", "search", ""], ["akm", "show", "k:z"]]),
            ("out=$(echo \\); akm search q)", [["echo", ")"], ["akm", "search", "q"]]),
            ("out=$(echo \\))", [["echo", ")"]]),
            ('out=$(printf "\\"%s" x; akm search q)', [["printf", '"%s', "x"], ["akm", "search", "q"]]),
            ("out=$( (cd ws) && akm search q )", [["cd", "ws"], ["akm", "search", "q"]]),
        ],
    )
    def test_a_substitution_ends_at_its_own_parenthesis(self, script: str, inside: list[list[str]]) -> None:
        """A `)` quoted, escaped or closing a subshell inside $(...) does not end it: what follows the
        substitution runs first, then what is inside it (the order the bench records them in)."""
        assert words(script + " && akm show 'k:y'") == [["akm", "show", "k:y"], *inside]

    def test_redirections(self) -> None:
        """Redirections are recorded with their targets; descriptor duplications are not files."""
        (c,) = commands("ls -la > out.txt 2>&1 </dev/null")
        assert c.words == ["ls", "-la"] and c.redirects == [(">", "out.txt"), ("<", "/dev/null")]
        assert commands("echo hi>out.txt")[0].redirects == [(">", "out.txt")]
        assert commands("cmd &>> all.log")[0].redirects == [("&>>", "all.log")]
        assert commands("read line <&3")[0].redirects == []
        assert commands("echo hi > Xorg.log")[0].redirects == [(">", "Xorg.log")]
        assert commands("echo hi > a\x00b")[0].redirects == [(">", "a\x00b")]  # a NUL the transcript's JSON carried


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
            "exec -a name akm search q",
            "setsid akm search q",
            "builtin akm search q",
            "nohup -- akm search q",
            "\\akm search q",
            "/usr/bin/timeout 30 akm search q",
            "/bin/bash -c 'akm search q'",
            "bash -l -c 'akm search q'",
            "bash --norc -c 'akm search q'",
            "env -u HOME akm search q",
            "env --unset HOME akm search q",
            "env -C /ws akm search q",
            "env -S 'nice -n 5' akm search q",
            "timeout -k 5 30 akm search q",
            "timeout --signal KILL 30 akm search q",
            "nice --adjustment 5 akm search q",
            "stdbuf -oL akm search q",
            "taskset -c 0 akm search q",
            "sudo -u bench akm search q",
            "doas -u bench akm search q",
            *(f"sudo {flag} x akm search q" for flag in ("-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U")),
            "pnpx akm search q",
            "pnpm dlx akm-cli search q",
            "pnpm exec akm search q",
            "yarn exec akm search q",
            "npx -p akm-cli akm search q",
            "npx --package akm-cli akm search q",
            "chrt -f 10 akm search q",  # chrt's priority comes before the command
            "chrt 10 akm search q",
            # SCHED_DEADLINE's three times are values of their options, then the priority 0
            "chrt -d -T 5000000 -D 10000000 -P 16666666 0 akm search q",
            "chrt -d --sched-runtime 5000000 --sched-deadline 10000000 --sched-period 16666666 0 akm search q",
            "taskset 3 akm search q",  # taskset's mask too
            "taskset --cpu-list 0,1 akm search q",
            "env - akm search q",  # `env -` is `env -i`
            "env - A=1 akm search q",
            "i=$((i+1)) akm search q",
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
            "docker exec akm search q",  # runs `search` in a container named akm
            "nohup - akm search q",  # a lone `-` is no option: nohup runs a program named `-`
            "nice - akm search q",
        ],
    )
    def test_mentions_are_not_calls(self, script: str) -> None:
        """Text that only mentions akm is no call."""
        assert calls(script) == []

    def test_arithmetic_is_no_command(self) -> None:
        """``$((...))`` is arithmetic: it runs nothing (it was once read as a subshell running a
        command named ``i+1``), and the commands around it are read as before."""
        assert words("i=$((i+1)); akm search q") == [["akm", "search", "q"]]
        assert words('echo "$(( (1+2)*3 ))" $(akm show x)') == [
            ["echo", "$(( (1+2)*3 ))", "$(akm show x)"],
            ["akm", "show", "x"],
        ]
        assert words("echo $((1+") == [["echo", "$((1+"]]
        # Unquoted, the arithmetic ends at the parenthesis that closes its own `$((`, nested
        # ones inside it included: nothing after it is read as a command of its own.
        assert words("echo $((2*(i+1)))x; akm show a") == [["echo", "$((2*(i+1)))x"], ["akm", "show", "a"]]


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
            *((f"git {sub} x", True) for sub in ("apply", "restore", "rm", "mv", "am", "reset")),
            ("git status", False),
            ("pwd", False),
            ("grep -i foo f.txt", False),
            ("perl -i -pe 's/a/b/' f.txt", True),
            ("sed --in-place 's/a/b/' f.txt", True),
            ("echo hi > 1", True),  # a file named 1, not a descriptor
            ("exec 3>&-", False),  # closing a descriptor
            ("> /dev/null", False),
            ("echo hi >", False),
        ],
    )
    def test_bash_write_detection(self, command: str, writes: bool) -> None:
        """Redirections and file-changing commands count; reads, quoted text, /dev and /tmp do not."""
        assert writes_files(command) is writes

    def test_dev_null_is_never_a_file_written(self) -> None:
        """Whatever a caller exempts, /dev/null is not a write."""
        assert writes_files("akm search q > /dev/null", exempt=("/tmp/",)) is False
        assert writes_files("akm search q > /dev/nul", exempt=("/tmp/",)) is True
