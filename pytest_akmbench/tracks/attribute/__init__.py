"""The attribute track: which assets of the stash matter (docs/tracks.md, "attribute")."""
