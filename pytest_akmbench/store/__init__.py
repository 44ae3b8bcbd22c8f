"""The sample store: the append-only samples file (``samples``), per-trial claims (``claims``),
the report invariant (``integrity``), write checks before a run (``preflight``) and the secret
scrubber every stored text passes through (``scrub``)."""
