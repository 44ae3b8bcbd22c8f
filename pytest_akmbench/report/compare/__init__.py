"""Comparing two envelopes: changes beyond noise, refusals, markdown, workflow compliance."""
