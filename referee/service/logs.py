"""Structured JSON logs: one object per line on standard error."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object, extra fields included."""

    def format(self, record: logging.LogRecord) -> str:
        """Returns the record as a JSON line."""
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        doc.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD and k[0] != "_")
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


def configure_logging(level: str) -> None:
    """Sends every log record to standard error as JSON."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # (alembic's plugin registry announces itself each time the migrations are read; uvicorn,
    # the operations port's server, its start and stop)
    for noisy in ("aiokafka", "faststream", "alembic.runtime.plugins", "uvicorn"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    # but the group's joins, assignments and revocations: rare, and what a stuck rebalance
    # is diagnosed from
    logging.getLogger("aiokafka.consumer.group_coordinator").setLevel(root.level)


def failure_line(logger: str, message: str, exit_code: int | None) -> str:
    """Returns a failure as one JSON log line, whether or not logging was configured yet."""
    record = logging.makeLogRecord(
        {"name": logger, "levelno": logging.ERROR, "levelname": "ERROR", "msg": message}
    )
    if exit_code is not None:
        record.exit_code = exit_code
    return JsonFormatter().format(record)
