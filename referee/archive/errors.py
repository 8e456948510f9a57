"""What can go wrong with an archive, one class a kind, each with a message that names the file."""

from __future__ import annotations


class ArchiveError(Exception):
    """Base of every archive error: a bad URL, an unreadable file, a path outside the archive."""


class ArchiveRowError(ArchiveError, ValueError):
    """A row that does not fit its table: wrong arity, wrong type, NULL where none may be, a naive
    datetime, an integer out of its column's range, a row outside its segment's time bounds."""


class ManifestError(ArchiveError):
    """A manifest that cannot be read or written: bad JSON, unknown fields, a run id taken."""


class SegmentAlreadyArchivedError(ArchiveError):
    """The (table, segment) is already listed by a manifest: archiving it again duplicates it."""


class VerificationError(ArchiveError):
    """A file read back is not what its manifest entry (or the store's rows) says."""


class ArchiveMismatchError(VerificationError):
    """Raised by ``iter_rows`` when the archive disagrees with its manifests while it is read."""


class AlteredFileError(VerificationError):
    """A file whose bytes are not the ones its manifest entry names (size or SHA-256)."""
