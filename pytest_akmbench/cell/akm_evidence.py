"""akm's log checked against the akm calls the agent made: which events a call accounts for.

akm keeps its log in the cell's run dir (docs/akm.md), which the agent can write to, so a line
in it proves nothing by itself. An event is evidence of what akm served only when an akm call
in the agent's transcript accounts for it: a call akm logs such an event for, made when the
event is stamped. Each call accounts for the events one run of it logs: ``akm search``, ``show``
and ``feedback`` one each (checked against real akm 0.7.0 and 0.9.0: 0.9's extra ``select``
after a show is not a search, show or feedback event), akm 0.7's ``curate Q`` a search of Q (or
of each of its words when Q finds nothing) and a show of each asset it picked. Pure: no pytest.
"""

from __future__ import annotations

from typing import Any

from . import akm

# How far outside its tool call's start and end an event may be stamped and still be the call's:
# akm's and the agent's clocks are the machine's, so this only absorbs rounding and akm's exit.
CALL_SLACK_MS = 2000
MAX_NAMED_EVENTS = 5  # unconfirmed events a warning names
_UNKNOWN = ("$", "`", "*", "?", "[")  # a word the shell expands: its value is not in the transcript


def _unknown(word: str | None) -> bool:
    return word is not None and any(c in word for c in _UNKNOWN)


def _same_query(said: str, logged: str | None) -> bool:
    """Whether a search akm logged as ``logged`` is the one the agent asked for as ``said``
    (akm trims the query; case and spacing are not held against the agent)."""
    if _unknown(said):
        return True
    return logged is not None and " ".join(said.split()).casefold() == " ".join(logged.split()).casefold()


def _same_ref(said: str | None, logged: str | None) -> bool:
    """Whether akm logging ``logged`` can be the call for ``said``: the same asset in either
    syntax, or a part of it either way (a skill for a file of it)."""
    if said is None:
        return False
    return _unknown(said) or akm.same_asset(said, logged) or akm.same_asset(logged, said)


def _curate_queries(query: str) -> set[str]:
    """What akm 0.7's ``curate Q`` searches: Q, and each word of it when Q finds nothing."""
    words = "".join(c if c.isalnum() else " " for c in query.casefold()).split()
    return {" ".join(query.split()).casefold(), *words}


def _in_time(call: dict[str, Any], event: dict[str, Any]) -> bool:
    start, end, at = call.get("t_ms"), call.get("t_end"), event["t_ms"]
    if start is None or at is None:
        return True  # an untimed call (the adapter's summary) is judged on what it names
    last = end if end is not None else start
    return bool(int(start) - CALL_SLACK_MS <= int(at) <= int(last) + CALL_SLACK_MS)


class _Curate:
    """What one ``akm curate Q`` call has accounted for so far: each query it searches and each
    asset it picked from what those searches found, once."""

    def __init__(self, query: str) -> None:
        self.queries = _curate_queries(query)
        self.any_query = _unknown(query)
        self.found: list[str] = []
        self.shown: list[str] = []

    def takes(self, event: dict[str, Any]) -> bool:
        if event["kind"] == "search":
            return self.any_query or " ".join((event["query"] or "").split()).casefold() in self.queries
        return (
            event["kind"] == "show"
            and any(_same_ref(r, event["ref"]) for r in self.found)
            and not any(_same_ref(r, event["ref"]) for r in self.shown)
        )

    def take(self, event: dict[str, Any]) -> None:
        if event["kind"] == "search":
            self.queries.discard(" ".join((event["query"] or "").split()).casefold())
            self.found += event["results"] or []
        else:
            self.shown.append(event["ref"])


def _stands_for(call: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether ``call`` (a search, show, feedback or ``wiki search``) is a call akm logs
    ``event`` for."""
    kind = event["kind"]
    if call["kind"] == "wiki":
        return kind == "search" and call.get("query") is not None and _same_query(call["query"], event["query"])
    if call["kind"] != kind:
        return False
    if kind == "search":
        return _same_query(call.get("query") or "", event["query"])
    if not _same_ref(call.get("ref"), event["ref"]):
        return False
    said, signal = call.get("polarity"), event.get("signal")
    return kind == "show" or said is None or signal is None or said == signal


def cross_check(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]]]:
    """akm's events paired with the akm calls that account for them, and the events none does.

    A search, show or feedback call accounts for one event of its kind: a search of the same
    query (any, when the transcript holds only a word the shell expands), a show or feedback of
    the same asset in either ref syntax (and the same polarity where both are known); ``wiki
    search NAME Q`` (akm 0.7) for a search of Q. akm 0.7's ``curate Q`` accounts for one search
    of Q and of each of its words, and one show of each asset those found. The event must be
    stamped within its call's tool call (:data:`CALL_SLACK_MS`) when the call has a time. A
    call's exit status does not matter: ``akm search q | grep x`` fails on grep after akm
    served. Events are taken in akm's order, each by the earliest free call that names it
    exactly, else by one whose words are unknown.
    """
    free = [c for c in calls if c["kind"] in ("search", "show", "feedback", "wiki")]
    curates = [(c, _Curate(c["query"])) for c in calls if c["kind"] == "curate" and c.get("query") is not None]
    used: set[int] = set()
    matched: list[tuple[dict[str, Any], dict[str, Any]]] = []
    unconfirmed: list[dict[str, Any]] = []
    for event in events:
        fits = [i for i, c in enumerate(free) if i not in used and _in_time(c, event) and _stands_for(c, event)]
        if fits:
            i = min(fits, key=lambda i: (_unknown(free[i].get("query") or free[i].get("ref")), i))
            used.add(i)
            matched.append((event, free[i]))
            continue
        curate = next(((c, k) for c, k in curates if _in_time(c, event) and k.takes(event)), None)
        if curate is None:
            unconfirmed.append(event)
            continue
        curate[1].take(event)
        matched.append((event, curate[0]))
    return matched, unconfirmed


def describe(events: list[dict[str, Any]]) -> str:
    """The first few events, each as its kind and what it names (for a warning)."""
    named = [
        f"search {e['query']!r}"
        if e["kind"] == "search"
        else f"{e['kind']} {e['ref']}" + (f" {e['signal']}" if e["kind"] == "feedback" and e["signal"] else "")
        for e in events[:MAX_NAMED_EVENTS]
    ]
    return ", ".join(named) + (", …" if len(events) > MAX_NAMED_EVENTS else "")
