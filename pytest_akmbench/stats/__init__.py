"""Statistics with no import from the package: intervals, tests, the sequential boundary."""
