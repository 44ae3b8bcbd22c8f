"""The suite's order under xdist: the longest tests first, handed out one at a time.

xdist's default ``load`` scheduling gives each of two workers a first chunk of a quarter of its
share of the collection (about 200 tests) and never moves a queued test to the other worker. The
suite collects ``tests/akm`` first, so every real-akm end-to-end test landed in the first
worker's chunk and ran one after another (about 18 minutes) while the other worker ran the
quick tests and then idled. Handing tests out one at a time (``--maxschedchunk 1``: a worker
holds the test it runs and one more) and starting the longest first keeps both workers busy
to the end (docs/testing.md, "Order under xdist").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# Node ids of the suite's longest tests, longest first (seconds: CI under -n 2, where measured).
# Of a fixture shared through a lock file (the evolve ``learned`` run, the browser's bench) only
# the first user is listed: the others stay where they are and find it built, instead of
# holding the other worker waiting on the lock. A renamed test just loses its place here.
LONGEST_FIRST: tuple[str, ...] = (
    "tests/akm/test_attribute.py::test_decisive_asset_matters_distractor_does_not_and_resume_reruns_nothing",  # 259
    "tests/report/test_browser.py::test_report_dir_is_a_readable_artifact",  # 70, builds the run
    "tests/akm/test_evolve.py::test_post_beats_pre_with_the_control_flat",  # 95, builds ``learned``
    "tests/akm/test_evolve.py::test_akm_09_improve_post_beats_pre_and_garbage_accepts_nothing",  # 106
    "tests/akm/test_akm_arm.py::TestShippedCorpus::test_oracle_on_akm_cells[0.9.0]",  # 76 + the workflow oracle's 34
    "tests/akm/test_akm_arm.py::TestShippedCorpus::test_oracle_on_akm_cells[0.7.0]",  # 65 + the workflow oracle's 29
    "tests/e2e/test_sandbox_opencode.py::test_snoop_reads_nothing_sandboxed_and_everything_without",
    "tests/e2e/test_claude_code_bench.py::test_oracle_passes_both_arms_and_akms_log_is_the_trajectory[0.9.0]",  # 63
    "tests/e2e/test_claude_code_bench.py::test_oracle_passes_both_arms_and_akms_log_is_the_trajectory[0.7.0]",  # 43
    "tests/e2e/test_claude_code_bench.py::test_snoop_reads_nothing_sandboxed_and_everything_without",  # 30
    "tests/akm/test_foreign_corpus.py::test_akm_arm_with_real_opencode_and_akm[0.9.0]",  # 3 cells, serial
    "tests/akm/test_foreign_corpus.py::test_akm_arm_with_real_opencode_and_akm[0.7.0]",
    "tests/akm/test_akm_arm.py::TestShippedCorpus::test_every_task_keywords_find_its_gold[0.9.0]",  # 40
    "tests/akm/test_akm_arm.py::TestShippedCorpus::test_every_task_keywords_find_its_gold[0.7.0]",  # 40
    "tests/akm/test_workflow_e2e.py::test_compliance_follows_what_the_agent_did_without_akm",
    "tests/e2e/test_main_job.py::test_main_job_on_one_task",
    "tests/akm/test_attribute_empty_stash.py::test_masking_the_only_asset_runs_the_cell_on_an_empty_stash[0.9.0]",
    "tests/akm/test_attribute_empty_stash.py::test_masking_the_only_asset_runs_the_cell_on_an_empty_stash[0.7.0]",
    "tests/plugin/test_ci_workflow.py::test_the_workflow_goes_green_on_a_fresh_runner",  # 120 alone
)


class Item(Protocol):
    nodeid: str


def longest_first(items: Sequence[Item], longest: Sequence[str] = LONGEST_FIRST) -> list[int]:
    """The order to run ``items`` in, as indices: the listed ones first, in the list's order,
    then every other item in its collected order."""
    rank = {nodeid: i for i, nodeid in enumerate(longest)}
    return sorted(range(len(items)), key=lambda i: (rank.get(items[i].nodeid, len(rank)), i))
