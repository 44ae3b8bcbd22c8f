"""The evolve track: does feedback make the stash better? (docs/tracks.md, "evolve")."""
