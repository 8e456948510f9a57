"""referee: an event-sourced referee microservice for the game of dominoes."""

from pathlib import Path as _Path

from referee._native_guard import check as _check_native

_check_native(_Path(__file__).resolve().parent)
