"""Run control and the store index, above report/: which cells the store holds, the samples a report is made of, merged stores, the adaptive plan."""
