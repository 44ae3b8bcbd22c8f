"""The opencode agent: the adapter (``adapter``) with where its binaries are (``binaries``) and
how one run is watched (``watch``); the live event parser (``events``); the providers file
(``providers``), where it is found (``discovery``) and the model choice (``model``); the scripted
model server that stands in for an LLM (``scripted``), its policies (``policies``, with the
``snoop`` policy's probe in ``snoop``) and its wire format (``replies``)."""
