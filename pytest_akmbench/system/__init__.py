"""What a bench run does to the operating system: processes (``procs``), the cell sandbox
(``sandbox``), run dirs and ``kill``/``clean`` (``lifecycle``), signals (``interrupts``)."""
