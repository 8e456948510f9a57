"""The limits EVENTS.md puts on input, checked on raw bytes and decoded strings.

Each check is written for the common case first: a check that runs on every event costs tens
of nanoseconds when the input is ordinary, and only unusual input pays for an exact answer.
"""

from __future__ import annotations

import re
from itertools import accumulate

MAX_DEPTH = 64
"""The deepest nesting an event may have, wherever it is (the event types need 4)."""

MAX_INTEGER = 2**53 - 1
"""The largest ``seq`` or ``round``: integers a JSON reader of any language holds exactly."""

# A JSON string (escapes included) or one bracket; strings are skipped, so brackets inside
# them do not count as nesting. A string left open runs to the end of the input, and nothing
# inside a string is tried again as the start of one: one pass, linear in the input, however
# its quotes and escapes are laid out (a pattern needing the closing quote restarted at every
# quote of an open string: quadratic in a long line).
_STRING_BODY = rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)'
_TOKEN = re.compile(_STRING_BODY + rb"|[\[\]{}]", re.DOTALL)
_OPENING = frozenset((b"[", b"{"))
_CLOSING = frozenset((b"]", b"}"))


def nesting_depth(raw: bytes) -> int:
    """Returns how deeply the JSON in ``raw`` nests objects and arrays (0 for a scalar).

    Exact for well-formed JSON; for malformed input it is what the brackets outside strings
    say (an opening one counts one level more, a closing one one less; a string left open
    runs to the end). Done in C but for one pass over the brackets: every byte but a bracket
    or a quote deleted, then the strings (the pieces between paired quotes when no escape
    makes them harder to find, else by the string pattern), then the running sum's highest
    point. Linear in the input whatever it holds (a property test holds it to a token scan).
    """
    structure = raw.translate(None, _NOT_STRUCTURE)
    if b"\\" in structure or structure.count(b'"') % 2:
        brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    else:  # no escape and the quotes paired: every other piece between quotes is outside
        brackets = b"".join(structure.split(b'"')[::2])
    return max(0, max(accumulate(map(_STEP.__getitem__, brackets)), default=0))


def is_too_deep(raw: bytes) -> bool:
    """Checks if the JSON in ``raw`` nests deeper than ``MAX_DEPTH``."""
    # Fewer brackets than the limit in all cannot nest deeper than it: that is every ordinary
    # event, so the exact count runs only for large deals and hostile input.
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    return nesting_depth(raw) > MAX_DEPTH


_STRING = re.compile(_STRING_BODY, re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"\\')
_STEP = {**dict.fromkeys(b"[{", 1), **dict.fromkeys(b"]}", -1)}


def flattened(raw: bytes) -> bytes:
    """Returns the JSON object in ``raw`` with every top-level value that is an object or an
    array replaced by ``null``.

    Only the envelope's scalars (``game_id``, ``seq``, ``event_id``) are read from input that
    nests too deeply to decode, and this keeps them where they are.
    """
    out: list[bytes] = []
    depth = 0
    kept_to = 0
    cut_from = 0
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token in _OPENING:
            depth += 1
            if depth == 2:
                cut_from = match.start()
        elif token in _CLOSING:
            if depth == 2:
                out += (raw[kept_to:cut_from], b"null")
                kept_to = match.end()
            depth -= 1
    out.append(raw[kept_to:])
    return b"".join(out)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def has_control_character(text: str) -> bool:
    """Checks if ``text`` holds a control character (U+0000-U+001F, U+007F-U+009F)."""
    if text.isascii():
        # ASCII without control characters is exactly printable ASCII (space included).
        return not text.isprintable()
    return _CONTROL.search(text) is not None


RFC3339_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
"""The shape of an RFC 3339 date-time (section 5.6), as a JSON Schema pattern."""

_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DAYS_IN_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_REAL_DATES: set[str] = set()
_CHECKED_MINUTES: set[str] = set()
"""``YYYY-MM-DDTHH:MM`` prefixes (either case of ``T``) of timestamps found good: a real date,
hour and minute."""
_DIGITS = frozenset("0123456789")
_REMEMBERED_DATES = 10_000
GOOD_TIMESTAMPS: set[str] = set()
"""Timestamps found good, exactly as written: the events of a table share their seconds (a
live stream repeats each many times), and the edge looks a repeat up before calling
``is_rfc3339``. Bounded as the other remembered values are."""
_REMEMBERED_TIMESTAMPS = 10_000


def is_rfc3339(value: str) -> bool:
    """Checks that ``value`` is an RFC 3339 date-time naming a real calendar date.

    ``T`` and ``Z`` in either case, any number of fraction digits, a leap second ``60``,
    offsets within +-23:59 (RFC 3339 section 5.6).
    """
    if len(value) == 20 and value[:16] in _CHECKED_MINUTES:
        # The usual shape, "YYYY-MM-DDTHH:MM:SSZ", in a minute already checked: only the
        # seconds (00-60, ASCII digits) and the zone remain.
        good = (
            value[16] == ":"
            and value[19] in "Zz"
            and value[17] in "0123456"
            and value[18] in _DIGITS
            and value[17:19] <= "60"
        )
        if good:
            _remember_timestamp(value)
        return good
    if _RFC3339.fullmatch(value) is None:
        return False
    # The pattern guarantees two ASCII digits in each field, so comparing the text compares
    # the numbers.
    if value[11:13] > "23" or value[14:16] > "59" or value[17:19] > "60":
        return False
    if value[-1] not in "Zz" and (value[-5:-3] > "23" or value[-2:] > "59"):
        return False
    date = value[:10]
    if date not in _REAL_DATES:
        if not _is_real_date(int(date[:4]), int(date[5:7]), int(date[8:10])):
            return False
        if len(_REAL_DATES) >= _REMEMBERED_DATES:
            _REAL_DATES.clear()
        _REAL_DATES.add(date)
    if len(value) == 20:  # the usual shape: its minute is good for every second of it
        if len(_CHECKED_MINUTES) >= _REMEMBERED_DATES:
            _CHECKED_MINUTES.clear()
        _CHECKED_MINUTES.add(value[:16])
    _remember_timestamp(value)
    return True


def _remember_timestamp(value: str) -> None:
    if len(GOOD_TIMESTAMPS) >= _REMEMBERED_TIMESTAMPS:
        GOOD_TIMESTAMPS.clear()
    GOOD_TIMESTAMPS.add(value)


def _is_real_date(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12 or day < 1:
        return False
    if month == 2 and day == 29:
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= _DAYS_IN_MONTH[month]
