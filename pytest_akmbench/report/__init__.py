"""Reporting: statistics (``stats``, ``significance``), per-arm figures (``metrics``, and for the akm
arm ``akm_usage`` and ``transfer``), paired comparisons (``lift``), the envelope (``envelope``), its
markdown (``markdown``), ``compare`` of two envelopes, ``gates``, and the samples a report is made
of (``resume``)."""
