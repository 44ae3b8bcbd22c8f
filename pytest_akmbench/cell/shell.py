"""What a shell tool command actually runs: a small shell lexer for reading agent transcripts.

An agent's bash command is a shell script. Counting ``akm search`` by looking for the words
in the text miscounts both ways: ``bash -c '...akm search...'`` hides a search, while a
heredoc written to a file or an ``echo "...akm search q"`` shows one that never ran. This
module splits a script into the simple commands a shell would run, following what a shell
follows (``;``, ``&&``, ``||``, pipes, subshells, ``$(...)`` and backticks, ``bash -c``,
``sh -c``, ``eval``, a heredoc fed to a shell, wrappers such as ``env``, ``timeout``,
``nohup``, ``npx`` and ``bunx``) and nothing else (quoted text, comments, the bodies of
heredocs given to other programs). It is a reader, not a shell: no expansion is performed,
and what a script computes at run time (``$VAR`` as a command, ``bash script.sh``) stays
unseen. Pure and stdlib-only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")")
_REDIRECT = re.compile(r"(\d*|&)(>>|>\||>&|<<<|<<-|<<|<>|<&|>|<)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_KEYWORDS = frozenset(("if", "then", "elif", "else", "do", "while", "until", "!", "{", "time", "coproc"))
_SHELLS = frozenset(("bash", "sh", "dash", "zsh", "ksh"))
_MAX_DEPTH = 8


@dataclass
class Command:
    """One simple command: its words (quotes removed, no expansion) and its redirections."""

    words: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    heredoc: str | None = None

    @property
    def name(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


class _Lexer:
    """Turns script text into words, operators, redirections and heredoc bodies."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.nested: list[str] = []  # scripts inside $(...) and backticks, run by the shell too

    def tokens(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        pending: list[int] = []  # indexes in out of heredoc operators awaiting their body
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c == "\n":
                self.i += 1
                out.append(("op", "\n"))
                for at in pending:
                    out[at] = ("heredoc", self._heredoc_body(out[at][1]))
                pending = []
            elif c in " \t\r":
                self.i += 1
            elif c == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                while self.i < n and text[self.i] != "\n":
                    self.i += 1
            elif redirect := _REDIRECT.match(text, self.i):
                self.i = redirect.end()
                op = redirect.group(0)
                target = self._word_after_blanks()
                if op.endswith(("<<", "<<-")):
                    out.append(("heredoc_start", target))
                    pending.append(len(out) - 1)
                elif not (op.endswith(("<&", ">&")) and (target.isdigit() or target == "-")):
                    out.append(("redirect", op + "\0" + target))  # 2>&1 is a descriptor, not a file
            elif operator := next((o for o in _OPERATORS if text.startswith(o, self.i)), None):
                self.i += len(operator)
                out.append(("op", operator))
            else:
                out.append(("word", self._word()))
        for at in pending:  # a heredoc never closed runs to the end of the script
            out[at] = ("heredoc", "")
        return out

    def _word_after_blanks(self) -> str:
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1
        return self._word()

    def _word(self) -> str:
        """One word: quotes removed, ``$(...)`` and backticks recorded as nested scripts."""
        text, n = self.text, len(self.text)
        parts: list[str] = []
        while self.i < n:
            c = text[self.i]
            if c in " \t\r\n<>" or next((o for o in _OPERATORS if text.startswith(o, self.i)), None):
                break
            if c == "'":
                end = text.find("'", self.i + 1)
                end = n if end < 0 else end
                parts.append(text[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                parts.append(self._double_quoted())
            elif c == "\\":
                parts.append(text[self.i + 1 : self.i + 2])
                self.i += 2
            else:
                parts.append(self._expansion_or_char())
        return "".join(parts)

    def _expansion_or_char(self) -> str:
        """A ``$(...)`` or backtick substitution (recorded as a nested script), else one character."""
        if self.text.startswith("$((", self.i):
            return self._arithmetic()
        if self.text.startswith("$(", self.i):
            return self._substitution()
        if self.text[self.i] == "`":
            return self._backticks()
        self.i += 1
        return self.text[self.i - 1]

    def _arithmetic(self) -> str:
        """``$((...))`` kept whole as text: arithmetic, not a subshell holding a command."""
        start, depth, n = self.i, 0, len(self.text)
        self.i += 1
        while self.i < n:
            depth += {"(": 1, ")": -1}.get(self.text[self.i], 0)
            self.i += 1
            if depth == 0:
                break
        return self.text[start : self.i]

    def _double_quoted(self) -> str:
        text, n = self.text, len(self.text)
        parts: list[str] = []
        while self.i < n and text[self.i] != '"':
            c = text[self.i]
            if c == "\\" and self.i + 1 < n and text[self.i + 1] in '"\\$`\n':
                parts.append(text[self.i + 1])
                self.i += 2
            else:
                parts.append(self._expansion_or_char())
        self.i += 1
        return "".join(parts)

    def _substitution(self) -> str:
        start, recorded = self.i, len(self.nested)
        self.i += 2
        depth = 1
        text, n = self.text, len(self.text)
        while self.i < n and depth:
            c = text[self.i]
            if c == "'":
                end = text.find("'", self.i + 1)
                self.i = n if end < 0 else end + 1
                continue
            if c == '"':
                self.i += 1
                self._double_quoted()
                continue
            if c == "\\":
                self.i += 2
                continue
            depth += c == "("
            depth -= c == ")"
            self.i += 1
        inner = text[start + 2 : self.i - 1] if depth == 0 else text[start + 2 :]
        del self.nested[recorded:]  # substitutions inside this one are parsed with it
        self.nested.append(inner)
        return text[start : self.i]

    def _backticks(self) -> str:
        start = self.i
        end = self.text.find("`", self.i + 1)
        self.i = len(self.text) if end < 0 else end + 1
        self.nested.append(self.text[start + 1 : (end if end >= 0 else len(self.text))])
        return self.text[start : self.i]

    def _heredoc_body(self, delimiter: str) -> str:
        lines: list[str] = []
        text = self.text
        while self.i < len(text):
            end = text.find("\n", self.i)
            end = len(text) if end < 0 else end
            line = text[self.i : end]
            self.i = end + 1
            if line.strip("\t") == delimiter:
                break
            lines.append(line)
        return "\n".join(lines)


def commands(script: str, _depth: int = 0) -> list[Command]:
    """The simple commands ``script`` runs, in order, including those of nested scripts."""
    if _depth > _MAX_DEPTH:
        return []
    lexer = _Lexer(script)
    found: list[Command] = []
    current = Command([])
    piped: str | None = None  # the heredoc of the command piping into this one

    def finish(op: str) -> None:
        nonlocal current, piped
        if piped is not None and current.heredoc is None:
            current.heredoc = piped  # `cat <<EOF | bash` feeds the heredoc to the shell
        if current.words or current.redirects:
            found.extend(_expand(current, _depth))
        piped = current.heredoc if op in ("|", "|&") and current.name == "cat" else None
        current = Command([])

    for kind, value in lexer.tokens():
        if kind == "op":
            finish(value)
        elif kind == "word":
            current.words.append(value)
        elif kind == "redirect":
            op, target = value.split("\0", 1)
            current.redirects.append((op, target))
        elif kind == "heredoc":
            current.heredoc = value
    finish("")
    for inner in lexer.nested:
        found.extend(commands(inner, _depth + 1))
    return found


def _expand(command: Command, depth: int) -> list[Command]:
    """The command itself, unwrapped, or the commands of the script it hands to a shell."""
    words = unwrap(command.words)
    if not words:
        return [Command([], command.redirects, command.heredoc)] if command.redirects else []
    name = words[0].rsplit("/", 1)[-1]
    if name in _SHELLS:
        script = _shell_script(words, command.heredoc)
        if script is not None:
            return commands(script, depth + 1)
    if name == "eval" and len(words) > 1:
        return commands(" ".join(words[1:]), depth + 1)
    return [Command(words, command.redirects, command.heredoc)]


def _shell_script(words: list[str], heredoc: str | None) -> str | None:
    for i, word in enumerate(words[1:], 1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return words[i + 1] if i + 1 < len(words) else ""
        if not word.startswith("-"):
            return None  # `bash script.sh`: its text is not in the command
    return heredoc  # `bash <<EOF ... EOF` or `bash -s <<EOF`


def unwrap(words: list[str]) -> list[str]:
    """Drop what runs the real command: assignments, keywords and wrapper programs."""
    i = 0
    while i < len(words):
        word = words[i]
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            i += 1
        elif name in ("command", "exec", "nohup", "builtin", "setsid"):
            i = _skip_options(words, i + 1, {"-a"})
        elif name == "env":
            i = _skip_options(words, i + 1, {"-u", "-C", "-S", "--unset", "--chdir"})
            while i < len(words) and (words[i] == "-" or _ASSIGNMENT.match(words[i])):  # `env -` is `env -i`
                i += 1
        elif name == "timeout":
            i = _skip_options(words, i + 1, {"-s", "-k", "--signal", "--kill-after"}) + 1  # + the duration
        elif name in ("nice", "ionice", "stdbuf"):
            i = _skip_options(words, i + 1, {"-n", "-c", "-p", "--adjustment"})
        elif name in ("chrt", "taskset"):  # `chrt [options] PRIORITY cmd`, `taskset [options] MASK cmd`
            i = (
                _skip_options(words, i + 1, {"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"})
                + 1
            )
        elif name in ("sudo", "doas"):
            i = _skip_options(words, i + 1, {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"})
        elif name in ("npx", "bunx", "pnpx") or (
            name in ("bun", "pnpm", "yarn") and words[i + 1 : i + 2] in (["x"], ["dlx"], ["exec"])
        ):
            i = _skip_options(words, i + (1 if name in ("npx", "bunx", "pnpx") else 2), {"-p", "--package"})
            if i < len(words) and (words[i] == "akm-cli" or words[i].startswith("akm-cli@")):
                words = [*words[:i], "akm", *words[i + 1 :]]  # the npm package's command is akm
        else:
            break
    return words[i:]


def _skip_options(words: list[str], i: int, with_value: set[str]) -> int:
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        i += 2 if words[i] in with_value else 1
    return i


def writes_files(script: str, exempt: tuple[str, ...] = ("/dev/", "/tmp/", "/proc/")) -> bool:
    """Best effort: does ``script`` change files (other than under ``exempt``)?

    Counted: an output redirection to a file, the file-changing commands (``tee``, ``cp``,
    ``mv``, ``rm``, ``touch``, ``mkdir``, ...), ``sed -i``/``perl -i`` and the git commands
    that rewrite the work tree. Not seen: writes made by programs (``python fix.py``).
    """
    for command in commands(script):
        for op, target in command.redirects:
            if ">" in op and target and not target.startswith(exempt) and target != "/dev/null":
                return True
        name, args = command.name, command.words[1:]
        if name in _WRITING:
            return True
        if name in ("sed", "perl") and any(a.startswith(("-i", "--in-place")) for a in args):
            return True
        if name == "git" and args[:1] and args[0] in ("apply", "checkout", "restore", "rm", "mv", "am", "reset"):
            return True
    return False


_WRITING = frozenset(
    (
        "tee",
        "cp",
        "mv",
        "rm",
        "touch",
        "mkdir",
        "rmdir",
        "ln",
        "chmod",
        "truncate",
        "install",
        "patch",
        "rsync",
        "dd",
        "unzip",
        "tar",
    )
)
