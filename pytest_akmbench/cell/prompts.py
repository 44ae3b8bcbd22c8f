"""The prompt each arm gives the agent, from versioned templates in ``prompts/<arm>.txt``.

* ``noakm``: task id, title, workspace, "read README.md". Nothing about akm, by design:
  the control arm must not be told about a tool it does not have.
* ``akm``: the same, plus how to use the akm CLI (search with the task's ``akm_keywords``,
  quoted, since akm searches only the first word of an unquoted query; show a ref as the
  search printed it; apply; feedback). Unlike the reference it never forces a ``commands.txt``; the README
  says what the answer is.
* ``synthetic``: the same as noakm, plus "write your own notes of the skills and steps first".

The version returned with each prompt is ``<PROMPT_VERSION>/<arm>/<hash of the template>``, so
editing a template changes the fingerprint even if someone forgets to bump ``PROMPT_VERSION``.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from ..corpus.tasks import Task
from ..errors import ConfigError
from ..records import ARMS
from .akm import AkmInfo, format_ref

PROMPT_VERSION = "2"
_DIR = Path(__file__).with_name("prompts")


@cache
def template(arm: str) -> str:
    """The raw template text of ``arm``."""
    if arm not in ARMS:
        raise ConfigError(f"arm {arm!r} has no prompt template; use one of {', '.join(ARMS)}")
    return (_DIR / f"{arm}.txt").read_text(encoding="utf-8")


def prompt_version(arm: str) -> str:
    digest = hashlib.sha256(template(arm).encode()).hexdigest()[:8]
    return f"{PROMPT_VERSION}/{arm}/{digest}"


def keywords(task: Task) -> str:
    """The search words for the akm arm: ``akm_keywords``, else the domain with dashes as spaces."""
    return (task.akm_keywords or task.domain.replace("-", " ")).strip()


def search_words(task: Task) -> list[str]:
    """The keywords as separate arguments, as akm-bench's prompt shows ``akm search <words>`` and
    the scripted policies send them (docs/akm.md, "Query forms")."""
    return keywords(task).split()


def build_prompt(task: Task, arm: str, workspace: Path, akm: AkmInfo | None = None) -> tuple[str, str]:
    """Return (prompt text, prompt version) for ``task`` under ``arm``; ``akm`` gives the ref syntax
    of the installed akm for the example in the akm arm's prompt."""
    text = template(arm)
    values = {
        "task_id": task.id,
        "title": " ".join(task.title.split()),
        "workspace": str(workspace),
        "keywords": keywords(task),
        "ref_example": format_ref("skill:name", akm.line if akm else "0.7"),
    }
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text, prompt_version(arm)
