"""Reporting: statistics (``stats``, ``significance``), per-arm figures (``metrics``), paired
comparisons (``lift``), the envelope (``envelope``), its markdown (``markdown``), ``compare`` of
two envelopes, ``gates``, and the samples a report is made of (``resume``)."""
