"""The scripted model: the project's only stand-in for an LLM, one policy per cell, spoken on
each agent's wire (placeholder until the scripted package lands on main)."""
