"""The agent CLI akm 0.7's ``reflect`` runs during the evolve track's proposal step: it sends
akm's prompt (its last argument) to akm's LLM (the chat-completions URL before it) and prints
the answer, which akm parses as its proposal. So reflect's LLM call goes where distill's goes
(docs/tracks.md, "evolve"). ``python -m pytest_akmbench.tracks.evolve.agent URL PROMPT``.
"""

from __future__ import annotations

import json
import sys
import urllib.request

TIMEOUT_S = 110.0  # under the agent timeout the step gives akm


def answer(url: str, prompt: str) -> str:
    body = {"model": "akm-proposals", "messages": [{"role": "user", "content": prompt}], "temperature": 0}
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        data = json.loads(response.read())
    return str(data["choices"][0]["message"]["content"] or "")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m pytest_akmbench.tracks.evolve.agent URL PROMPT", file=sys.stderr)
        return 2
    try:
        print(answer(argv[0], argv[1]))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
        print(f"akm's LLM at {argv[0]} did not answer: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
