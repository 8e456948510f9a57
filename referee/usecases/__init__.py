"""The use cases above the engine: replay a log, audit or explain a journal, archive the store.

Each drives the engine (``referee.processing``) with the store or the archive; the commands of
``referee.cli`` call them (cosmicpython's service layer).
"""
