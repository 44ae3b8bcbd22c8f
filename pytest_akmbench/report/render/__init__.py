"""Rendering an envelope: the markdown summary, report.html, the report directory."""
