"""Edition 1's logs give edition 1's verdicts and rejections, byte for byte (RULES.md,
"Compatibility").

The hashes below were produced by the code of ``main`` before edition 2 (commit ``1c470d3``,
and again by ``2101fe2``, which gives the same),
which ran ``simulate(SimulationOptions(games=250, seed=7, foul_rate=0.05, bad_rate=0.01,
duplicate_rate=0.01))`` (edition 1's random rules), replayed the log from a file, and hashed
the verdicts and the rejections (their ``source.file``, the log's path, written ``LOG``).
Edition 2 writes the same log with ``rules="edition1"``, and must judge it the same. The
full-size check (``referee simulate --games 1900 --seed 7``, the golden logs and the example,
``cmp`` against ``main``) is recorded in docs/rules.md, "Compatibility".
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from referee.simulate import SimulationOptions, simulate
from referee.usecases.replay import replay

LOG_SHA256 = "18f40a005c7d7ec3af1827f1796fb509f8232452bae4256962cf6ff6c259e324"
VERDICTS_SHA256 = "7e471dada9d4366033d32bb91fc0587c74645b13664d155bb8fbf3c540e03d24"
REJECTED_SHA256 = "0e7cc7756ae1eaab9193a064a7e4fd97fcadc31585458ea352172fc3bf91dbea"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_seeded_edition_1_simulation_is_judged_exactly_as_edition_1_judged_it(
    tmp_path: Path,
) -> None:
    options = SimulationOptions(
        games=250, seed=7, foul_rate=0.05, bad_rate=0.01, duplicate_rate=0.01, rules="edition1"
    )
    log = b"".join(line + b"\n" for _, line in simulate(options))
    assert len(log.splitlines()) == 26530
    assert _sha(log) == LOG_SHA256  # the simulator writes edition 1's log

    path = tmp_path / "log.jsonl"
    path.write_bytes(log)
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    report = replay(path, verdicts, rejected)

    assert sum(report.tally.rejections.values()) == 241
    assert len(verdicts.getvalue().splitlines()) == 2064
    assert _sha(verdicts.getvalue()) == VERDICTS_SHA256
    # Rejections name the log's file; the path is the one thing that differs from then.
    assert _sha(rejected.getvalue().replace(str(path).encode(), b"LOG")) == REJECTED_SHA256
