"""The opencode agent: the adapter (``adapter``), its live event parser (``events``), the
providers file (``providers``) and the scripted model server that stands in for an LLM
(``scripted``, with its ``snoop`` policy)."""
