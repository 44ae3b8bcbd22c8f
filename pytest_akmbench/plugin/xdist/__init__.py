"""The pytest-xdist side of a bench run: --parallel as xdist's -n, the controller's hooks, and
the schedulers of the evolve track and of adaptive runs. What they take from xdist's internals
is in plugin/internals.py."""
