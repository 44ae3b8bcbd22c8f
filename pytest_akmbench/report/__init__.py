"""Reporting: per-arm figures (``metrics``, and for the akm arm ``akm_usage`` and ``transfer``),
paired comparisons (``lift``), the envelope (``envelope``), ``gates`` and the ``verdict``; the
summary, report.html and the report directory in ``render/``; two envelopes compared in
``compare/``. The statistics are in ``pytest_akmbench.stats``, the samples a report is made of
in ``pytest_akmbench.run``."""
