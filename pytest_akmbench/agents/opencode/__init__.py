"""The opencode agent: the adapter (``adapter``) with where its binaries are (``binaries``) and
how one run is watched (``watch``); the live event parser (``events``); the providers file
(``providers``), where it is found (``discovery``) and the model choice (``model``). The scripted
model it runs offline against is the agent-neutral ``pytest_akmbench.scripted`` package."""
