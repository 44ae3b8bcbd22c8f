"""Run control and the store index: which cells the store holds, the adaptive plan, merged stores."""
