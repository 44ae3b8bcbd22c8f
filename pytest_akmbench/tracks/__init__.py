"""The tracks beyond utility: attribute and evolve (docs/tracks.md)."""
