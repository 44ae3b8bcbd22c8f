"""``python -m pytest_akmbench``: the commands (``main``) and ``doctor``; no pytest needed."""
