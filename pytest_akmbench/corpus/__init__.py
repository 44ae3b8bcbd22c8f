"""The corpus: tasks, their schema and hashes (``tasks``), and run configs and settings (``config``)."""
